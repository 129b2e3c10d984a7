package simulation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// store is the simulation's API server: typed objects kept in memory and deep-copied in and
// out, with what the controller relies on — resource versions and conflicts, UIDs and
// creation times, finalizers and deletion timestamps, generations, the status subresource
// (a write of the object keeps the stored status, a status write keeps the rest) and merge
// patches with the optimistic lock. controller-runtime's fake client converts every object
// through JSON on every call, which cost most of a simulated step; here only patches go
// through JSON. Calls the simulation never makes (watches, apply, other subresources) panic
// through the embedded nil client.
type store struct {
	client.Client
	scheme *runtime.Scheme
	clock  clock.Clock

	mu   sync.Mutex
	objs map[reflect.Type]map[types.NamespacedName]client.Object
	rv   int
	uids int
	// created, when set, is called after each Create with the created object, so that a
	// directed test can see what else was stored at that moment.
	created func(obj client.Object)
	// statusWrites, when not negative, is how many more status writes land: the ones after
	// it are lost (an etcd timeout: the client sees an error, nothing is stored).
	statusWrites int
	// statusWritten counts the status writes that landed.
	statusWritten int
}

func newStore(scheme *runtime.Scheme, clk clock.Clock, objs ...client.Object) *store {
	s := &store{scheme: scheme, clock: clk, objs: map[reflect.Type]map[types.NamespacedName]client.Object{}, statusWrites: -1}
	for _, o := range objs {
		if err := s.Create(context.Background(), o.DeepCopyObject().(client.Object)); err != nil {
			panic(err)
		}
	}
	return s
}

func typeOf(obj runtime.Object) reflect.Type { return reflect.TypeOf(obj).Elem() }

func (s *store) groupResource(obj runtime.Object) schema.GroupResource {
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return schema.GroupResource{Resource: typeOf(obj).Name()}
	}
	return schema.GroupResource{Group: gvk.Group, Resource: strings.ToLower(gvk.Kind) + "s"}
}

// version is the store's resource version: it changes with every write.
func (s *store) version() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rv
}

func (s *store) nextRV() string {
	s.rv++
	return strconv.Itoa(s.rv)
}

// copyInto overwrites dst with a deep copy of src (both the same pointer type).
func copyInto(dst, src runtime.Object) {
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src.DeepCopyObject()).Elem())
}

// field returns a struct field of an object ("Spec", "Status"), or an invalid value.
func field(obj runtime.Object, name string) reflect.Value {
	return reflect.ValueOf(obj).Elem().FieldByName(name)
}

func (s *store) lookup(obj client.Object) (client.Object, error) {
	cur, ok := s.objs[typeOf(obj)][client.ObjectKeyFromObject(obj)]
	if !ok {
		return nil, apierrors.NewNotFound(s.groupResource(obj), obj.GetName())
	}
	return cur, nil
}

// Get implements client.Reader.
func (s *store) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.objs[typeOf(obj)][key]
	if !ok {
		return apierrors.NewNotFound(s.groupResource(obj), key.Name)
	}
	copyInto(obj, cur)
	return nil
}

// List implements client.Reader: namespace and label selector, sorted by name.
func (s *store) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	s.mu.Lock()
	defer s.mu.Unlock()
	items := reflect.ValueOf(list).Elem().FieldByName("Items")
	objs := s.objs[items.Type().Elem()]
	keys := make([]types.NamespacedName, 0, len(objs))
	for k, o := range objs {
		if lo.Namespace != "" && k.Namespace != lo.Namespace {
			continue
		}
		if lo.LabelSelector != nil && !lo.LabelSelector.Matches(labelSet(o.GetLabels())) {
			continue
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	out := reflect.MakeSlice(items.Type(), len(keys), len(keys))
	for i, k := range keys {
		out.Index(i).Set(reflect.ValueOf(objs[k].DeepCopyObject()).Elem())
	}
	items.Set(out)
	list.SetResourceVersion(strconv.Itoa(s.rv))
	return nil
}

type labelSet map[string]string

func (l labelSet) Has(k string) bool              { _, ok := l[k]; return ok }
func (l labelSet) Get(k string) string            { return l[k] }
func (l labelSet) Lookup(k string) (string, bool) { v, ok := l[k]; return v, ok }

// Create implements client.Writer.
func (s *store) Create(_ context.Context, obj client.Object, _ ...client.CreateOption) error {
	if err := s.create(obj); err != nil {
		return err
	}
	if s.created != nil {
		s.created(obj)
	}
	return nil
}

func (s *store) create(obj client.Object) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, key := typeOf(obj), client.ObjectKeyFromObject(obj)
	if _, ok := s.objs[t][key]; ok {
		return apierrors.NewAlreadyExists(s.groupResource(obj), key.Name)
	}
	if obj.GetUID() == "" {
		s.uids++
		obj.SetUID(types.UID(fmt.Sprintf("uid-%d", s.uids)))
	}
	if ts := obj.GetCreationTimestamp(); ts.IsZero() {
		obj.SetCreationTimestamp(metav1.NewTime(s.clock.Now()))
	}
	obj.SetGeneration(1)
	obj.SetResourceVersion(s.nextRV())
	if s.objs[t] == nil {
		s.objs[t] = map[types.NamespacedName]client.Object{}
	}
	s.objs[t][key] = obj.DeepCopyObject().(client.Object)
	return nil
}

// write stores next in place of cur (same key), as the API server would after a write of the
// object (not its status): the status, UID, creation and deletion stay the stored ones, the
// generation moves with the spec, and an object being deleted goes once its last finalizer
// is removed.
func (s *store) write(cur, next client.Object) {
	if st := field(next, "Status"); st.IsValid() {
		st.Set(field(cur, "Status"))
	}
	next.SetUID(cur.GetUID())
	next.SetCreationTimestamp(cur.GetCreationTimestamp())
	next.SetDeletionTimestamp(cur.GetDeletionTimestamp())
	next.SetDeletionGracePeriodSeconds(cur.GetDeletionGracePeriodSeconds())
	next.SetGeneration(cur.GetGeneration())
	if sp := field(next, "Spec"); sp.IsValid() && !equality.Semantic.DeepEqual(sp.Interface(), field(cur, "Spec").Interface()) {
		next.SetGeneration(cur.GetGeneration() + 1)
	}
	s.put(next)
}

func (s *store) put(next client.Object) {
	key := client.ObjectKeyFromObject(next)
	if next.GetDeletionTimestamp() != nil && len(next.GetFinalizers()) == 0 && ptr.Deref(next.GetDeletionGracePeriodSeconds(), 0) == 0 {
		delete(s.objs[typeOf(next)], key)
		s.rv++
		return
	}
	next.SetResourceVersion(s.nextRV())
	s.objs[typeOf(next)][key] = next
}

func (s *store) conflict(obj client.Object, cur client.Object, rv string) error {
	if rv != "" && rv != cur.GetResourceVersion() {
		return apierrors.NewConflict(s.groupResource(obj), obj.GetName(),
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	return nil
}

// modify changes a stored object under the lock: change returns what is stored next (nil for
// nothing), which obj then becomes.
func (s *store) modify(obj client.Object, change func(cur client.Object) (client.Object, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.lookup(obj)
	if err != nil {
		return err
	}
	next, err := change(cur)
	if err != nil || next == nil {
		return err
	}
	copyInto(obj, next)
	return nil
}

// Update implements client.Writer.
func (s *store) Update(_ context.Context, obj client.Object, _ ...client.UpdateOption) error {
	return s.modify(obj, func(cur client.Object) (client.Object, error) {
		if err := s.conflict(obj, cur, obj.GetResourceVersion()); err != nil {
			return nil, err
		}
		next := obj.DeepCopyObject().(client.Object)
		s.write(cur, next)
		return next, nil
	})
}

// patched applies a merge patch to the stored object and returns the result, checking the
// optimistic lock when the patch carries a resourceVersion.
//
// Every patch of the controller is client.MergeFrom of the object it read, changed in place;
// when that read is still the stored version (same resourceVersion), the patch turns the
// stored object into obj, which saves the JSON round trip that was most of a step's cost.
func (s *store) patched(obj client.Object, cur client.Object, patch client.Patch) (client.Object, error) {
	if patch.Type() != types.MergePatchType {
		panic(fmt.Sprintf("simulation store: %s patches are not modelled", patch.Type()))
	}
	if obj.GetResourceVersion() == cur.GetResourceVersion() {
		return obj.DeepCopyObject().(client.Object), nil
	}
	data, err := patch.Data(obj)
	if err != nil {
		return nil, err
	}
	var lock struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &lock); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if err := s.conflict(obj, cur, lock.Metadata.ResourceVersion); err != nil {
		return nil, err
	}
	orig, err := json.Marshal(cur)
	if err != nil {
		return nil, err
	}
	merged, err := jsonpatch.MergePatch(orig, data)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	next := reflect.New(typeOf(obj)).Interface().(client.Object)
	if err := json.Unmarshal(merged, next); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return next, nil
}

// Patch implements client.Writer for merge patches.
func (s *store) Patch(_ context.Context, obj client.Object, patch client.Patch, _ ...client.PatchOption) error {
	return s.modify(obj, func(cur client.Object) (client.Object, error) {
		next, err := s.patched(obj, cur, patch)
		if err != nil {
			return nil, err
		}
		s.write(cur, next)
		return next, nil
	})
}

// Delete implements client.Writer: an object with finalizers gets a deletion timestamp;
// dependents are the model's garbage collector's business. A pod is deleted gracefully, as
// the API server does: one bound to a node and not terminal stays, Terminating, with a
// deletion timestamp at the end of its grace period (the option's, else the pod's
// terminationGracePeriodSeconds) until its kubelet deletes it again with grace 0; a delete
// with grace 0 (a force delete) removes it at once, finalizers aside.
func (s *store) Delete(_ context.Context, obj client.Object, opts ...client.DeleteOption) error {
	do := (&client.DeleteOptions{}).ApplyOptions(opts)
	return s.modify(obj, func(cur client.Object) (client.Object, error) {
		if p, ok := cur.(*corev1.Pod); ok {
			s.deletePodLocked(p, do.GracePeriodSeconds)
			return nil, nil
		}
		s.deleteLocked(cur)
		return nil, nil
	})
}

func (s *store) deletePodLocked(p *corev1.Pod, grace *int64) {
	g := ptr.Deref(grace, ptr.Deref(p.Spec.TerminationGracePeriodSeconds, corev1.DefaultTerminationGracePeriodSeconds))
	if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		g = 0
	}
	if p.DeletionTimestamp != nil && g >= ptr.Deref(p.DeletionGracePeriodSeconds, 0) {
		return // a longer grace never extends a deletion under way
	}
	if g == 0 && len(p.Finalizers) == 0 {
		delete(s.objs[typeOf(p)], client.ObjectKeyFromObject(p))
		s.rv++
		return
	}
	next := p.DeepCopy()
	at := metav1.NewTime(s.clock.Now().Add(time.Duration(g) * time.Second))
	next.DeletionTimestamp, next.DeletionGracePeriodSeconds = &at, ptr.To(g)
	s.put(next)
}

func (s *store) deleteLocked(cur client.Object) {
	if len(cur.GetFinalizers()) == 0 {
		delete(s.objs[typeOf(cur)], client.ObjectKeyFromObject(cur))
		s.rv++
		return
	}
	if cur.GetDeletionTimestamp() == nil {
		next := cur.DeepCopyObject().(client.Object)
		now := metav1.NewTime(s.clock.Now())
		next.SetDeletionTimestamp(&now)
		next.SetDeletionGracePeriodSeconds(ptr.To[int64](0))
		s.put(next)
	}
}

// DeleteAllOf implements client.Writer (namespace and labels).
func (s *store) DeleteAllOf(_ context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	lo := (&client.DeleteAllOfOptions{}).ApplyOptions(opts)
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, o := range s.objs[typeOf(obj)] {
		if (lo.Namespace == "" || k.Namespace == lo.Namespace) &&
			(lo.LabelSelector == nil || lo.LabelSelector.Matches(labelSet(o.GetLabels()))) {
			if p, ok := o.(*corev1.Pod); ok {
				s.deletePodLocked(p, lo.GracePeriodSeconds)
			} else {
				s.deleteLocked(o)
			}
		}
	}
	return nil
}

// Status implements client.StatusClient.
func (s *store) Status() client.SubResourceWriter { return statusWriter{s: s} }

// Scheme implements client.Client.
func (s *store) Scheme() *runtime.Scheme { return s.scheme }

// RESTMapper implements client.Client: the simulation needs none.
func (s *store) RESTMapper() meta.RESTMapper { return nil }

// GroupVersionKindFor implements client.Client.
func (s *store) GroupVersionKindFor(obj runtime.Object) (schema.GroupVersionKind, error) {
	return apiutil.GVKForObject(obj, s.scheme)
}

// IsObjectNamespaced implements client.Client: every simulated object is.
func (s *store) IsObjectNamespaced(runtime.Object) (bool, error) { return true, nil }

// statusWriter writes the status subresource: only the status changes.
type statusWriter struct {
	client.SubResourceWriter
	s *store
}

// lost reports whether this status write is lost (store.statusWrites), counting it; the
// caller holds s.mu (modify).
func (w statusWriter) lost(obj client.Object) error {
	switch {
	case w.s.statusWrites < 0:
		return nil
	case w.s.statusWrites == 0:
		return apierrors.NewTimeoutError(fmt.Sprintf("the status write of %s was lost", obj.GetName()), 0)
	}
	w.s.statusWrites--
	return nil
}

func (w statusWriter) writeStatus(cur, next client.Object) client.Object {
	w.s.statusWritten++
	out := cur.DeepCopyObject().(client.Object)
	field(out, "Status").Set(field(next, "Status"))
	w.s.put(out)
	return out
}

// Update implements client.SubResourceWriter.
func (w statusWriter) Update(_ context.Context, obj client.Object, _ ...client.SubResourceUpdateOption) error {
	return w.s.modify(obj, func(cur client.Object) (client.Object, error) {
		if err := w.s.conflict(obj, cur, obj.GetResourceVersion()); err != nil {
			return nil, err
		}
		if err := w.lost(obj); err != nil {
			return nil, err
		}
		return w.writeStatus(cur, obj.DeepCopyObject().(client.Object)), nil
	})
}

// Patch implements client.SubResourceWriter for merge patches.
func (w statusWriter) Patch(_ context.Context, obj client.Object, patch client.Patch, _ ...client.SubResourcePatchOption) error {
	return w.s.modify(obj, func(cur client.Object) (client.Object, error) {
		next, err := w.s.patched(obj, cur, patch)
		if err != nil {
			return nil, err
		}
		if err := w.lost(obj); err != nil {
			return nil, err
		}
		return w.writeStatus(cur, next), nil
	})
}
