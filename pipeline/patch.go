package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	sigsjson "sigs.k8s.io/json"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// DefaultingPatch returns the JSON patch (RFC 6902) that turns sent, the object as the
// API server sent it, into defaulted. decoded is sent as decoded (case-sensitively, no name
// given twice), before defaulting.
//
// The operations are jsonpatch.CreatePatch's (the library controller-runtime's defaulters
// use) from decoded to defaulted, both as the Go types write them: they say exactly what
// defaulting changed, and never re-spell what the user wrote (a quantity written "0.5"
// that the Go type writes "500m", a null or empty member the Go type leaves out), so a
// GitOps tool comparing the stored object with its source sees no drift the webhook made.
// Each operation is then anchored in sent, whose members may be missing or null where the
// Go types write an empty value.
//
// fieldPatch finds them from the Go values, without encoding the objects; when it cannot
// (a list changed), diffPatch encodes what changed and diffs the JSON.
func DefaultingPatch(sent []byte, decoded, defaulted *v1beta1.FlinkCluster) ([]jsonpatch.Operation, error) {
	if ops, ok := fieldPatch(sent, decoded, defaulted); ok {
		return ops, nil
	}
	return diffPatch(sent, decoded, defaulted)
}

// diffPatch is DefaultingPatch by jsonpatch.CreatePatch on the objects' JSON, each
// operation then anchored in sent (anchor).
//
// Only the fields defaulting changed are encoded and compared (changedFields): on a
// typical object defaulting changes a few fields of two of the spec's members, and
// CreatePatch, which decodes both documents whole, cost three times as much on the whole
// objects.
func diffPatch(sent []byte, decoded, defaulted *v1beta1.FlinkCluster) ([]jsonpatch.Operation, error) {
	before, after := changedFields(decoded, defaulted)
	b, err := json.Marshal(before)
	if err != nil {
		return nil, fmt.Errorf("encoding the object as sent: %w", err)
	}
	a, err := json.Marshal(after)
	if err != nil {
		return nil, fmt.Errorf("encoding the defaulted object: %w", err)
	}
	ops, err := jsonpatch.CreatePatch(b, a)
	if err != nil || len(ops) == 0 {
		return nil, err
	}
	// When every operation is in the spec, as policy.Default's always are, only the spec
	// is read, split into its members: the rest of the object (metadata, with its managed
	// fields, often most of a stored object's bytes) is only skipped.
	prefix := "/spec"
	var doc container
	if slices.ContainsFunc(ops, func(op jsonpatch.Operation) bool { return !strings.HasPrefix(op.Path, prefix+"/") }) {
		prefix = ""
		doc, err = split(sent)
	} else {
		var obj struct {
			Spec map[string]json.RawMessage `json:"spec"`
		}
		// Case-sensitive, as the API server and the webhook read it.
		err = sigsjson.UnmarshalCaseSensitivePreserveInts(sent, &obj)
		doc = container{members: obj.Spec, ok: obj.Spec != nil}
		for i := range ops {
			ops[i].Path = strings.TrimPrefix(ops[i].Path, prefix)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("reading the object as sent: %w", err)
	}
	var whole any = defaulted
	if prefix != "" {
		whole = &defaulted.Spec
	}
	return anchor(ops, doc, whole, prefix)
}

// changedFields returns copies of before and after that keep only the fields in which
// they differ, down to the fields of the spec's members: every other field is zero in both
// copies, so it encodes the same and CreatePatch finds no operation in it.
func changedFields(before, after *v1beta1.FlinkCluster) (b, a *v1beta1.FlinkCluster) {
	b, a = &v1beta1.FlinkCluster{}, &v1beta1.FlinkCluster{}
	keepChanged(reflect.ValueOf(before).Elem(), reflect.ValueOf(after).Elem(), reflect.ValueOf(b).Elem(), reflect.ValueOf(a).Elem(), 2)
	return b, a
}

// marshalerType is the type of a value that encodes itself.
var marshalerType = reflect.TypeFor[json.Marshaler]()

// encodesItself reports whether encoding/json encodes a struct of type t, or a pointer to
// one, with its own MarshalJSON. Asked of struct fields only: the others are compared
// whole anyway, and the question costs a lookup of the method sets.
func encodesItself(t reflect.Type) bool {
	return t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType)
}

// keepChanged sets the fields of the structs b and a to those of before and after where
// they differ, and reports whether any does. Where both are structs, or pointers to
// structs, it keeps only their fields that differ in turn, depth levels down, unless the
// struct encodes itself (a quantity, a time): zeroing some of its fields would change how
// the others encode.
func keepChanged(before, after, b, a reflect.Value, depth int) (changed bool) {
	for i := range before.NumField() {
		bf, af := before.Field(i), after.Field(i)
		if !bf.CanInterface() {
			// An unexported field: encoding/json does not write it either.
			continue
		}
		t := bf.Type()
		switch {
		case depth == 0:
		case t.Kind() == reflect.Struct && !encodesItself(t):
			changed = keepChanged(bf, af, b.Field(i), a.Field(i), depth-1) || changed
			continue
		case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct && !bf.IsNil() && !af.IsNil() &&
			!encodesItself(t.Elem()):
			// Both set: compared field by field (left nil in both copies when equal).
			nb, na := reflect.New(t.Elem()), reflect.New(t.Elem())
			if keepChanged(bf.Elem(), af.Elem(), nb.Elem(), na.Elem(), depth-1) {
				b.Field(i).Set(nb)
				a.Field(i).Set(na)
			}
			continue
		}
		if deepEqual(bf, af) {
			continue
		}
		changed = true
		b.Field(i).Set(bf)
		a.Field(i).Set(af)
	}
	return changed
}

// deepEqual is reflect.DeepEqual on two addressable values of one type. DeepEqual
// allocates on every call (its record of visited pointers) and for every entry of a map it
// compares; scalars, unset pointers, maps and slices, and string maps, most of a spec's
// fields, are compared here without it.
func deepEqual(x, y reflect.Value) bool {
	switch x.Kind() {
	case reflect.String:
		return x.String() == y.String()
	case reflect.Bool:
		return x.Bool() == y.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return x.Int() == y.Int()
	case reflect.Pointer, reflect.Slice:
		if x.IsNil() || y.IsNil() {
			return x.IsNil() == y.IsNil()
		}
	case reflect.Map:
		if x.IsNil() || y.IsNil() {
			return x.IsNil() == y.IsNil()
		}
		if m, ok := x.Interface().(map[string]string); ok {
			return maps.Equal(m, y.Interface().(map[string]string))
		}
	}
	// Through pointers: boxing the values themselves would copy them.
	return reflect.DeepEqual(x.Addr().Interface(), y.Addr().Interface())
}

// jsonValue decodes one JSON value as CreatePatch decodes its values: numbers as
// json.Number, so that none is rounded.
func jsonValue(doc []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// anchor rewrites ops, computed from the Go types' JSON, so that they apply to sent (the
// JSON the operations' paths are relative to; after is the Go value they lead to), and
// prefixes their paths. An operation inside a member that sent lacks or has null (a
// member the Go type writes even when empty) becomes one "add" of that member whole, its
// value read from after; a "replace" of a member sent lacks becomes an "add", and a
// "remove" of one is dropped. Lists keep their length when decoded, so an index valid in
// the Go types' JSON is valid in sent.
//
// sent is read only as deep as the operations' paths go (see container): a typical spec's
// Flink properties, volumes or affinity, which no operation reaches, are never decoded.
func anchor(ops []jsonpatch.Operation, sent container, after any, prefix string) ([]jsonpatch.Operation, error) {
	var afterDoc any
	added := map[string]bool{}
	// read holds the containers of sent read so far, by their JSON pointer: operations
	// share most of their paths.
	read := map[string]container{}
	containerAt := func(pointer string, raw json.RawMessage) (container, error) {
		if c, ok := read[pointer]; ok {
			return c, nil
		}
		c, err := split(raw)
		if err != nil {
			return container{}, fmt.Errorf("reading the object as sent: %w", err)
		}
		read[pointer] = c
		return c, nil
	}
	root := sent
	var err error
	out := ops[:0]
	for _, op := range ops {
		tokens := pointerTokens(op.Path)
		node, parent, missing := root, container{}, -1
		rest := op.Path
		for i, tok := range tokens[:len(tokens)-1] {
			parent = node
			_, rest = cutToken(rest)
			raw, ok := node.child(tok)
			if ok {
				if node, err = containerAt(op.Path[:len(op.Path)-len(rest)], raw); err != nil {
					return nil, err
				}
			}
			if !ok || !node.ok {
				// An operation cannot reach inside a member sent lacks, or one that is no
				// object or list.
				missing = i
				break
			}
		}
		if missing < 0 && root.ok {
			_, present := node.child(tokens[len(tokens)-1])
			switch {
			case op.Operation == "remove" && !present:
				continue
			case op.Operation == "replace" && !present:
				op.Operation = "add"
			}
			op.Path = prefix + op.Path
			out = append(out, op)
			continue
		}
		// The first member on the way that sent lacks is set whole: the root itself when
		// sent is null or no object (no spec at all).
		var at []string // the member set whole; none for the root
		path := ""
		if root.ok {
			at = tokens[:missing+1]
			path = "/" + strings.Join(escapeAll(at), "/")
		}
		if added[path] {
			continue
		}
		added[path] = true
		if afterDoc == nil {
			// Encoded only now: most patches need no member set whole.
			b, err := json.Marshal(after)
			if err != nil {
				return nil, fmt.Errorf("encoding the defaulted object: %w", err)
			}
			if afterDoc, err = jsonValue(b); err != nil {
				return nil, fmt.Errorf("reading the defaulted object: %w", err)
			}
		}
		v, err := lookup(afterDoc, at)
		if err != nil {
			return nil, err
		}
		// "add" creates a member or replaces a null one, but inserts into a list: a null
		// element is replaced.
		verb := "add"
		if parent.list {
			verb = "replace"
		}
		out = append(out, jsonpatch.Operation{Operation: verb, Path: prefix + path, Value: v})
	}
	if len(out) == 0 {
		return nil, nil
	}
	slices.SortStableFunc(out, comparePaths)
	return out, nil
}

// container is an object or a list of the object as sent, split into its members' or
// elements' JSON, which are decoded only when an operation's path goes into them. Any other
// value, null included, is no container (ok is false).
type container struct {
	members  map[string]json.RawMessage
	items    []json.RawMessage
	ok, list bool
}

// split reads one JSON value as a container, one level deep.
func split(raw json.RawMessage) (container, error) {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	var c container
	var err error
	switch {
	case len(raw) == 0:
	case raw[0] == '{':
		c.ok = true
		err = sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &c.members)
	case raw[0] == '[':
		c.ok, c.list = true, true
		err = sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &c.items)
	}
	return c, err
}

// child returns the member or element tok of c and whether c has it (null included).
func (c container) child(tok string) (json.RawMessage, bool) {
	if c.list {
		i, ok := arrayIndex(tok)
		if !ok || i >= len(c.items) {
			return nil, false
		}
		return c.items[i], true
	}
	v, ok := c.members[tok]
	return v, ok
}

// childPresent returns the member or element tok of node and whether node has it (null
// included).
func childPresent(node any, tok string) (any, bool) {
	switch n := node.(type) {
	case map[string]any:
		v, ok := n[tok]
		return v, ok
	case []any:
		i, err := strconv.Atoi(tok)
		if err != nil || i < 0 || i >= len(n) {
			return nil, false
		}
		return n[i], true
	}
	return nil, false
}

// lookup returns the value at tokens in doc.
func lookup(doc any, tokens []string) (any, error) {
	for _, tok := range tokens {
		v, ok := childPresent(doc, tok)
		if !ok {
			return nil, fmt.Errorf("the defaulted object has no %q", tok)
		}
		doc = v
	}
	return doc, nil
}

// pointerTokens splits a JSON pointer into its unescaped reference tokens; the root ("")
// has none.
func pointerTokens(p string) []string {
	if p == "" {
		return nil
	}
	tokens := strings.Split(p[1:], "/")
	for i, t := range tokens {
		tokens[i] = unescape(t)
	}
	return tokens
}

// unescape undoes the escapes of a JSON pointer's reference token.
func unescape(tok string) string {
	if !strings.Contains(tok, "~") {
		return tok
	}
	return pointerUnescaper.Replace(tok)
}

// escapeAll escapes reference tokens for a JSON pointer.
func escapeAll(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		out[i] = pointerEscaper.Replace(t)
	}
	return out
}

var (
	// pointerEscaper escapes the two characters a JSON pointer's reference tokens cannot
	// hold.
	pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")
	// pointerUnescaper undoes pointerEscaper.
	pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")
)

// comparePaths orders operations by path, so that a patch does not depend on the order in
// which jsonpatch.CreatePatch walks its maps (at random). Array indices compare as
// numbers, the removals of a list's trailing elements from the last one down, as
// CreatePatch writes them: each removal must leave the next one's index in place.
func comparePaths(a, b jsonpatch.Operation) int {
	ap, bp := a.Path, b.Path
	for ap != "" && bp != "" {
		var as, bs string
		as, ap = cutToken(ap)
		bs, bp = cutToken(bp)
		if as == bs {
			continue
		}
		na, aIndex := arrayIndex(as)
		nb, bIndex := arrayIndex(bs)
		if !aIndex || !bIndex {
			return strings.Compare(as, bs)
		}
		if a.Operation == "remove" && b.Operation == "remove" && ap == "" && bp == "" {
			return nb - na
		}
		return na - nb
	}
	return strings.Compare(ap, bp)
}

// cutToken splits the first reference token off a JSON pointer: "/a/b" into "a" and "/b".
func cutToken(p string) (token, rest string) {
	p = strings.TrimPrefix(p, "/")
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[:i], p[i:]
	}
	return p, ""
}

// arrayIndex reads a reference token as a list index: digits only (strconv.Atoi would
// also take a sign, and builds an error for every member name).
func arrayIndex(tok string) (int, bool) {
	if tok == "" || strings.TrimLeft(tok, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(tok)
	return n, err == nil
}
