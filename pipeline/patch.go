package pipeline

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"

	"gomodules.xyz/jsonpatch/v2"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// DefaultingPatch returns the JSON patch (RFC 6902) that turns the object as sent into the
// defaulted one, given before (the sent object, decoded) and after (the same, defaulted).
//
// The generic way, controller-runtime's PatchResponseFromRaw, encodes after and diffs the
// two JSON documents: two full parses and a full encoding, about 3,000 allocations for a
// production-size FlinkCluster, for the handful of fields defaulting sets. Here the two Go
// values are compared field by field instead, and only what changed is encoded. The
// result applies to the object as sent because of how the operations are placed:
//
//   - Every operation is "add", which creates a member or replaces the one there, so it
//     does not matter whether the sent object had the field, had it empty or null.
//   - A struct or map that is empty in before is replaced as a whole: the sent object may
//     lack it, and then it has no members to add to. A non-empty one can only have come
//     from the sent object, so the diff goes into it.
//   - Lists are replaced as a whole (no index arithmetic).
//   - Types with their own JSON encoding (quantities, times, int-or-string) are leaves.
//
// A field that was set and is cleared in after is removed. policy.Default never clears
// anything; the case is there so that the patch is right whatever the defaulting does.
func DefaultingPatch(before, after *v1beta1.FlinkCluster) []jsonpatch.JsonPatchOperation {
	d := differ{}
	d.value("", reflect.ValueOf(before).Elem(), reflect.ValueOf(after).Elem())
	return d.ops
}

// differ collects the operations of one diff.
type differ struct {
	ops []jsonpatch.JsonPatchOperation
}

func (d *differ) add(path string, v reflect.Value) {
	d.ops = append(d.ops, jsonpatch.JsonPatchOperation{Operation: "add", Path: path, Value: v.Interface()})
}

func (d *differ) remove(path string) {
	d.ops = append(d.ops, jsonpatch.JsonPatchOperation{Operation: "remove", Path: path})
}

// value diffs two values of one type at path. Its caller knows that the sent object has
// the parent of path.
func (d *differ) value(path string, b, a reflect.Value) {
	t := b.Type()
	if t.Kind() == reflect.Pointer {
		switch {
		case b.IsNil() && a.IsNil():
		case a.IsNil():
			d.remove(path)
		case b.IsNil():
			d.add(path, a)
		default:
			d.value(path, b.Elem(), a.Elem())
		}
		return
	}
	if isLeaf(t) {
		if !reflect.DeepEqual(b.Interface(), a.Interface()) {
			d.add(path, a)
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		switch {
		case b.IsZero() && a.IsZero():
		case b.IsZero():
			d.add(path, a)
		default:
			d.fields(path, b, a)
		}
	case reflect.Map:
		switch {
		case b.Len() == 0 && a.Len() == 0:
		case a.Len() == 0:
			d.remove(path)
		case b.Len() == 0:
			d.add(path, a)
		default:
			d.mapEntries(path, b, a)
		}
	case reflect.Slice:
		switch {
		case b.Len() == 0 && a.Len() == 0:
		case a.Len() == 0:
			d.remove(path)
		case !reflect.DeepEqual(b.Interface(), a.Interface()):
			d.add(path, a)
		}
	default:
		// Strings, numbers, booleans.
		if !b.Equal(a) {
			d.add(path, a)
		}
	}
}

// fields diffs the fields of two non-empty structs. Inline fields (TypeMeta) sit at the
// struct's own path.
func (d *differ) fields(path string, b, a reflect.Value) {
	for _, f := range jsonFields(b.Type()) {
		fb, fa := b.Field(f.index), a.Field(f.index)
		if f.inline {
			d.fields(path, fb, fa)
			continue
		}
		d.value(path+"/"+f.pointer, fb, fa)
	}
}

// mapEntries diffs two non-empty maps with string keys, in key order so that one object
// always gets the same patch.
func (d *differ) mapEntries(path string, b, a reflect.Value) {
	keys := make([]string, 0, a.Len())
	for _, k := range a.MapKeys() {
		keys = append(keys, k.String())
	}
	slices.Sort(keys)
	kt := a.Type().Key()
	for _, k := range keys {
		kv := reflect.ValueOf(k).Convert(kt)
		va, vb := a.MapIndex(kv), b.MapIndex(kv)
		p := path + "/" + escapePointer(k)
		if !vb.IsValid() {
			d.add(p, va)
			continue
		}
		d.value(p, vb, va)
	}
	var gone []string
	for _, k := range b.MapKeys() {
		if !a.MapIndex(k).IsValid() {
			gone = append(gone, k.String())
		}
	}
	slices.Sort(gone)
	for _, k := range gone {
		d.remove(path + "/" + escapePointer(k))
	}
}

// escapePointer escapes a key for a JSON pointer (RFC 6901): "~" is "~0", "/" is "~1".
func escapePointer(k string) string {
	if !strings.ContainsAny(k, "~/") {
		return k
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

// isLeaf reports whether values of t are compared and encoded whole: types with their own
// JSON encoding, and interfaces.
func isLeaf(t reflect.Type) bool {
	return t.Kind() == reflect.Interface || t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType)
}

// jsonField is a struct field as encoding/json sees it.
type jsonField struct {
	index int
	// pointer is the field's JSON name, escaped for a JSON pointer.
	pointer string
	inline  bool
}

// fieldCache maps a struct type to its []jsonField: reading struct tags once per type.
var fieldCache sync.Map

// jsonFields returns the encoded fields of a struct type.
func jsonFields(t reflect.Type) []jsonField {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]jsonField)
	}
	var fs []jsonField
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if !sf.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		inline := sf.Anonymous && name == "" || slices.Contains(strings.Split(opts, ","), "inline")
		if name == "" {
			name = sf.Name
		}
		fs = append(fs, jsonField{index: i, pointer: escapePointer(name), inline: inline})
	}
	fieldCache.Store(t, fs)
	return fs
}
