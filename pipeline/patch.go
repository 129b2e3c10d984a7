package pipeline

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

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
// Pointers, maps and slices that refer to the same memory in before and after are equal
// without a look inside: after is usually a shallow copy of before defaulted by
// policy.Default, which copies on write, so everything it did not change is shared and
// the diff walks only the few members it replaced.
//
// A field that was set and is cleared in after is removed. policy.Default never clears
// anything; the case is there so that the patch is right whatever the defaulting does.
func DefaultingPatch(before, after *v1beta1.FlinkCluster) []jsonpatch.JsonPatchOperation {
	d := differ{path: make([]string, 0, 8)}
	d.value(reflect.ValueOf(before).Elem(), reflect.ValueOf(after).Elem())
	return d.ops
}

// differ collects the operations of one diff. The path of the value being compared is a
// stack of escaped JSON pointer segments, joined only for an operation: most fields are
// unchanged, and building every path would cost an allocation per field.
type differ struct {
	ops  []jsonpatch.JsonPatchOperation
	path []string
}

func (d *differ) push(segment string) { d.path = append(d.path, segment) }
func (d *differ) pop()                { d.path = d.path[:len(d.path)-1] }

// pointer returns the current path as a JSON pointer, built in one allocation.
func (d *differ) pointer() string {
	n := 0
	for _, s := range d.path {
		n += 1 + len(s)
	}
	var b strings.Builder
	b.Grow(n)
	for _, s := range d.path {
		b.WriteByte('/')
		b.WriteString(s)
	}
	return b.String()
}

func (d *differ) add(v reflect.Value) {
	d.addValue(v.Interface())
}

func (d *differ) addValue(v any) {
	d.op(jsonpatch.JsonPatchOperation{Operation: "add", Path: d.pointer(), Value: v})
}

func (d *differ) remove() {
	d.op(jsonpatch.JsonPatchOperation{Operation: "remove", Path: d.pointer()})
}

func (d *differ) op(op jsonpatch.JsonPatchOperation) {
	if d.ops == nil {
		// Room for what defaulting usually sets, so that the list rarely grows.
		d.ops = make([]jsonpatch.JsonPatchOperation, 0, 8)
	}
	d.ops = append(d.ops, op)
}

// value diffs two values of one type at the current path. Its caller knows that the sent
// object has the parent of the path.
func (d *differ) value(b, a reflect.Value) {
	d.valueOf(b, a, isLeaf(b.Type()))
}

// valueOf is value for a caller that knows whether the type is a leaf (a struct field's is
// looked up once per struct type, with its name).
func (d *differ) valueOf(b, a reflect.Value, leaf bool) {
	t := b.Type()
	if t.Kind() == reflect.Pointer {
		switch {
		case b.IsNil() && a.IsNil():
		case a.IsNil():
			d.remove()
		case b.IsNil():
			d.add(a)
		case b.Pointer() == a.Pointer():
			// The same memory: equal.
		default:
			d.value(b.Elem(), a.Elem())
		}
		return
	}
	if leaf {
		if !deepEqual(b, a) {
			d.add(a)
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		switch {
		case b.IsZero() && a.IsZero():
		case b.IsZero():
			d.add(a)
		default:
			d.fields(b, a)
		}
	case reflect.Map:
		switch {
		case b.Len() == 0 && a.Len() == 0:
		case b.Pointer() == a.Pointer():
			// The same map: equal.
		case a.Len() == 0:
			d.remove()
		case b.Len() == 0:
			d.add(a)
		default:
			switch bm := b.Interface().(type) {
			case map[string]string:
				entries(d, bm, a.Interface().(map[string]string), sameString)
			case corev1.ResourceList:
				entries(d, bm, a.Interface().(corev1.ResourceList), sameQuantity)
			default:
				d.mapEntries(b, a)
			}
		}
	case reflect.Slice:
		switch {
		case b.Len() == 0 && a.Len() == 0:
		case a.Len() == 0:
			d.remove()
		case !deepEqual(b, a):
			d.add(a)
		}
	default:
		// Strings, numbers, booleans.
		if !b.Equal(a) {
			d.add(a)
		}
	}
}

// fields diffs the fields of two non-empty structs. Inline fields (TypeMeta) sit at the
// struct's own path.
func (d *differ) fields(b, a reflect.Value) {
	// A field whose bytes are the same in both is equal: the same pointers point to the
	// same memory, the same string and slice headers to the same contents. Most of what a
	// shallow copy shares is skipped so, before reflection looks at it. (Equal fields in
	// other bytes are left to valueOf; values that are not addressable, map entries, get
	// no shortcut; a field of no size has one value.) UnsafeAddr, not Addr: Addr looks up
	// the pointer type in a global map.
	var pb, pa unsafe.Pointer
	if b.CanAddr() && a.CanAddr() {
		pb, pa = unsafe.Pointer(b.UnsafeAddr()), unsafe.Pointer(a.UnsafeAddr())
	}
	for _, f := range jsonFields(b.Type()) {
		if f.size == 0 || pb != nil && bytes.Equal(
			unsafe.Slice((*byte)(unsafe.Add(pb, f.offset)), f.size),
			unsafe.Slice((*byte)(unsafe.Add(pa, f.offset)), f.size)) {
			continue
		}
		fb, fa := b.Field(f.index), a.Field(f.index)
		if f.inline {
			d.fields(fb, fa)
			continue
		}
		d.push(f.pointer)
		d.valueOf(fb, fa, f.leaf)
		d.pop()
	}
}

// entries diffs two non-empty maps of a known type without reflection: map[string]string
// (flinkProperties, labels, annotations: most maps of a FlinkCluster) and resource lists.
// Only the keys that changed are sorted (so that one object always gets the same patch):
// usually none.
func entries[K ~string, V any](d *differ, b, a map[K]V, same func(b, a V) bool) {
	var changed, gone []string
	for k, va := range a {
		if vb, ok := b[k]; !ok || !same(vb, va) {
			changed = append(changed, string(k))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			gone = append(gone, string(k))
		}
	}
	slices.Sort(changed)
	for _, k := range changed {
		d.push(escapePointer(k))
		d.addValue(a[K(k)])
		d.pop()
	}
	d.removeKeys(gone)
}

func sameString(b, a string) bool { return b == a }

// sameQuantity reports whether two quantities encode to the same JSON: the same value in
// the same format (the encoding is canonical), so a resource list needs no operation for
// 1024Mi turned into 1Gi.
func sameQuantity(b, a resource.Quantity) bool {
	return b.Format == a.Format && b.Cmp(a) == 0
}

// removeKeys removes the map entries gone, in key order.
func (d *differ) removeKeys(gone []string) {
	slices.Sort(gone)
	for _, k := range gone {
		d.push(escapePointer(k))
		d.remove()
		d.pop()
	}
}

// mapEntries diffs two non-empty maps with string keys of any other type, in key order so
// that one object always gets the same patch.
func (d *differ) mapEntries(b, a reflect.Value) {
	keys := make([]string, 0, a.Len())
	for _, k := range a.MapKeys() {
		keys = append(keys, k.String())
	}
	slices.Sort(keys)
	kt := a.Type().Key()
	for _, k := range keys {
		kv := reflect.ValueOf(k).Convert(kt)
		va, vb := a.MapIndex(kv), b.MapIndex(kv)
		d.push(escapePointer(k))
		if !vb.IsValid() {
			d.add(va)
		} else {
			d.value(vb, va)
		}
		d.pop()
	}
	var gone []string
	for _, k := range b.MapKeys() {
		if !a.MapIndex(k).IsValid() {
			gone = append(gone, k.String())
		}
	}
	d.removeKeys(gone)
}

// deepEqual is reflect.DeepEqual on two values of one type, for the acyclic trees a
// decoded object is: it walks them without the bookkeeping DeepEqual allocates for
// cycles, and without boxing values into interfaces.
func deepEqual(b, a reflect.Value) bool {
	switch b.Kind() {
	case reflect.Pointer:
		if b.IsNil() || a.IsNil() {
			return b.IsNil() == a.IsNil()
		}
		return b.Pointer() == a.Pointer() || deepEqual(b.Elem(), a.Elem())
	case reflect.Interface:
		if b.IsNil() || a.IsNil() {
			return b.IsNil() == a.IsNil()
		}
		return b.Elem().Type() == a.Elem().Type() && deepEqual(b.Elem(), a.Elem())
	case reflect.Struct:
		for i := range b.NumField() {
			if !deepEqual(b.Field(i), a.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if b.IsNil() != a.IsNil() || b.Len() != a.Len() {
			return false
		}
		if b.Pointer() == a.Pointer() {
			return true
		}
		fallthrough
	case reflect.Array:
		for i := range b.Len() {
			if !deepEqual(b.Index(i), a.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if b.IsNil() != a.IsNil() || b.Len() != a.Len() {
			return false
		}
		if b.Pointer() == a.Pointer() {
			return true
		}
		if b.CanInterface() {
			switch bm := b.Interface().(type) {
			case map[string]string:
				return maps.Equal(bm, a.Interface().(map[string]string))
			case corev1.ResourceList:
				return maps.EqualFunc(bm, a.Interface().(corev1.ResourceList), sameQuantity)
			}
		}
		for it := b.MapRange(); it.Next(); {
			va := a.MapIndex(it.Key())
			if !va.IsValid() || !deepEqual(it.Value(), va) {
				return false
			}
		}
		return true
	case reflect.String:
		return b.String() == a.String()
	case reflect.Bool:
		return b.Bool() == a.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return b.Int() == a.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return b.Uint() == a.Uint()
	case reflect.Float32, reflect.Float64:
		return b.Float() == a.Float()
	case reflect.Complex64, reflect.Complex128:
		return b.Complex() == a.Complex()
	default:
		// Funcs, channels, unsafe pointers: equal only when both are nil, as in DeepEqual.
		return b.IsNil() && a.IsNil()
	}
}

// pointerEscaper escapes a key for a JSON pointer (RFC 6901): "~" is "~0", "/" is "~1".
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// escapePointer escapes a key for a JSON pointer.
func escapePointer(k string) string {
	if !strings.ContainsAny(k, "~/") {
		return k
	}
	return pointerEscaper.Replace(k)
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

// leafCache maps a type to whether it is a leaf: the method sets are searched once per type.
var leafCache sync.Map

// isLeaf reports whether values of t are compared and encoded whole: types with their own
// JSON encoding, and interfaces. Strings, numbers and booleans are not: they need no search.
func isLeaf(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Struct, reflect.Map, reflect.Slice, reflect.Array:
	default:
		if t.PkgPath() == "" {
			return false
		}
	}
	if leaf, ok := leafCache.Load(t); ok {
		return leaf.(bool)
	}
	leaf := t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType)
	leafCache.Store(t, leaf)
	return leaf
}

// jsonField is a struct field as encoding/json sees it.
type jsonField struct {
	index int
	// pointer is the field's JSON name, escaped for a JSON pointer.
	pointer string
	inline  bool
	// leaf is isLeaf of the field's type.
	leaf bool
	// offset and size place the field in its struct's memory.
	offset, size uintptr
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
		fs = append(fs, jsonField{index: i, pointer: escapePointer(name), inline: inline, leaf: isLeaf(sf.Type),
			offset: sf.Offset, size: sf.Type.Size()})
	}
	fieldCache.Store(t, fs)
	return fs
}
