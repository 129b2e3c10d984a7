package simulation_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
)

// The differential test drives the same sequences of events through the model of Kubernetes
// (kube_test.go) and through a real control plane (testenv.StartControlPlane:
// kube-apiserver, etcd, kube-controller-manager, kube-scheduler, KWOK nodes), with no
// FlinkCluster controller in either, and compares the JobManager workload, its ReplicaSets
// and its pods on a normalised view (kinds, phases, readiness, deletion, the state of the
// pod's node, restart counts, the Job's conditions; never names or UIDs).
//
// Time: the model runs on virtual time, one tick a second, with the real plane's timings
// (node monitor grace, pod GC quarantine); the real plane runs on real time. After each event
// the model runs for the step's settle time and records the views it passes through; the
// real plane must then reach the model's last view, pass, in order, through every view the
// model held for at least modelHeld, and hold no view for realHeld or more that the model
// never shows (a view with a Pending pod aside: scheduling and KWOK's start take real time
// the model does not spend).
const (
	diffNodeMonitorGrace = 10 * time.Second
	diffPreStop          = 2
	diffGrace            = 6
	modelHeld            = 2 * time.Second
	realHeld             = 4 * time.Second
	// realSlack is how much longer than the model's settle time the real plane may take
	// (scheduling, watch latency and a loaded machine); a wait, not an assertion.
	realSlack = 90 * time.Second
)

// plane is one side of the comparison.
type plane interface {
	// create creates the JobManager workload.
	create(obj client.Object) error
	// deletePod deletes the live JobManager pod, gracefully or with grace 0.
	deletePod(force bool) error
	// stopNode stops the heartbeats of the live pod's node; startNode and deleteNode act
	// on the node stopNode stopped, or on the live pod's node when none was.
	stopNode() error
	startNode() error
	deleteNode() error
	// deleteWorkload deletes the JobManager Deployment or Job with background propagation.
	deleteWorkload() error
	// scale sets the Deployment's replicas.
	scale(replicas int32) error
	// view is the normalised state.
	view() (string, error)
}

// diffStep is one event and how long the model then runs.
type diffStep struct {
	name   string
	do     func(p plane) error
	settle time.Duration
}

func createStep() diffStep {
	return diffStep{"create", nil, 5 * time.Second}
}

func eventStep(name string, settle time.Duration, do func(p plane) error) diffStep {
	return diffStep{name, do, settle}
}

// diffSequence is a row of the table: a behaviour, the deployment type, its steps.
type diffSequence struct {
	name string
	mode v1beta1.JobManagerDeploymentType
	// ownNodes: the sequence stops or deletes a node, so it gets two nodes of its own.
	ownNodes bool
	steps    []diffStep
}

func diffSequences() []diffSequence {
	dep, job := v1beta1.JobManagerDeploymentTypeDeployment, v1beta1.JobManagerDeploymentTypeJob
	deletePod := eventStep("delete the pod", 15*time.Second, func(p plane) error { return p.deletePod(false) })
	forceDelete := eventStep("force-delete the pod", 15*time.Second, func(p plane) error { return p.deletePod(true) })
	deleteWorkload := eventStep("delete the workload (background)", 20*time.Second, plane.deleteWorkload)
	deleteNode := eventStep("delete the node", 80*time.Second, plane.deleteNode)
	return []diffSequence{
		{"a deleted pod is Terminating through its preStop, then gone; the ReplicaSet replaces it at once", dep, false,
			[]diffStep{createStep(), deletePod}},
		{"a force-deleted pod leaves the API at once; the ReplicaSet replaces it", dep, false,
			[]diffStep{createStep(), forceDelete}},
		{"a lost node: Ready=False after the monitor grace, evicted after the 30 s toleration and Terminating beside its replacement; the node back, the evicted pod goes", dep, true,
			[]diffStep{createStep(), eventStep("stop the node's heartbeats", 70*time.Second, plane.stopNode),
				eventStep("the node back", 20*time.Second, plane.startNode)}},
		{"a deleted node: its pod Running in the API until pod garbage collection, then replaced", dep, true,
			[]diffStep{createStep(), deleteNode}},
		{"the Deployment deleted in the background: the garbage collector removes its ReplicaSet, then its pod", dep, false,
			[]diffStep{createStep(), deleteWorkload}},
		{"scaled to 0 the ReplicaSet deletes its pod, scaled to 1 it makes a new one", dep, false,
			[]diffStep{createStep(), eventStep("scale to 0", 15*time.Second, func(p plane) error { return p.scale(0) }),
				eventStep("scale to 1", 10*time.Second, func(p plane) error { return p.scale(1) })}},
		{"a deleted pod: JobFailureTarget and the tracking finalizer removed at once, JobFailed once the pod is gone, no new pod", job, false,
			[]diffStep{createStep(), deletePod}},
		{"a force-deleted pod: held by the tracking finalizer until the Job controller counted it, the Job failed", job, false,
			[]diffStep{createStep(), forceDelete}},
		{"a lost node: Ready=False, not evicted within the 300 s toleration; the node deleted, pod garbage collection fails the pod and the Job", job, true,
			[]diffStep{createStep(), eventStep("stop the node's heartbeats", 25*time.Second, plane.stopNode), deleteNode}},
		{"the Job deleted in the background: its pod goes, the tracking finalizer released", job, false,
			[]diffStep{createStep(), deleteWorkload}},
	}
}

// diffWorkload is the JobManager workload of a sequence, as the controller builds it, with no
// owner (no FlinkCluster exists) and held to the sequence's nodes.
func diffWorkload(mode v1beta1.JobManagerDeploymentType, namespace string, nodes []string) client.Object {
	fc := diffCluster(mode)
	d := resources.Deploy{Revision: "wc-1", JobID: "00000000000000000000000000000001"}
	affinity := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: nodes,
		}}}},
	}}}
	var obj client.Object
	if mode == v1beta1.JobManagerDeploymentTypeDeployment {
		dep := resources.JobManagerDeployment(fc, d, 1)
		dep.Spec.Template.Spec.Affinity = affinity
		obj = dep
	} else {
		j := resources.JobManagerJob(fc, d)
		j.Spec.Template.Spec.Affinity = affinity
		obj = j
	}
	obj.SetNamespace(namespace)
	obj.SetOwnerReferences(nil)
	return obj
}

func diffCluster(mode v1beta1.JobManagerDeploymentType) *v1beta1.FlinkCluster {
	return builder.MakeAppCluster(name).DeploymentType(mode).Shutdown(diffPreStop, diffGrace).Obj()
}

// traced is a view and how long it held.
type traced struct {
	view string
	held time.Duration
}

func formatTrace(tr []traced) string {
	var b strings.Builder
	for _, e := range tr {
		fmt.Fprintf(&b, "      [held %s]\n", e.held.Round(100*time.Millisecond))
		for _, l := range strings.Split(e.view, "\n") {
			b.WriteString("        " + l + "\n")
		}
	}
	return b.String()
}

// TestModelMatchesTheRealControlPlane runs every sequence of the table through the model and
// through the real control plane and compares them step by step (see the package's
// differential test comment above). The real plane's binaries are built by
// hack/envtest-binaries.sh when FLINK_ADMISSION_CONTROL_PLANE does not name them; the test
// fails, never skips, when they cannot be had.
func TestModelMatchesTheRealControlPlane(t *testing.T) {
	cp, err := testenv.StartControlPlane(testenv.ControlPlaneOptions{
		NodeLeaseDuration: 8 * time.Second, NodeMonitorGracePeriod: diffNodeMonitorGrace,
	})
	if err != nil {
		t.Fatalf("starting the real control plane: %v", err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	k8s, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	shared := []string{"diff-shared-0", "diff-shared-1"}
	for _, n := range shared {
		if err := cp.AddNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	var nodeMu sync.Mutex // AddNode numbers nodes in order
	for i, seq := range diffSequences() {
		t.Run(string(seq.mode)+"/"+seq.name, func(t *testing.T) {
			t.Parallel()
			nodes := shared
			if seq.ownNodes {
				nodes = []string{fmt.Sprintf("diff-%d-0", i), fmt.Sprintf("diff-%d-1", i)}
				nodeMu.Lock()
				for _, n := range nodes {
					if err := cp.AddNode(ctx, n); err != nil {
						nodeMu.Unlock()
						t.Fatal(err)
					}
				}
				nodeMu.Unlock()
				t.Cleanup(func() {
					for _, n := range nodes {
						_ = cp.DeleteNode(ctx, n)
					}
				})
			}
			namespace := fmt.Sprintf("diff-%d", i)
			real := newRealPlane(t, cp, k8s, namespace)
			model := newModelPlane(t, seq.mode, len(nodes))
			runDifferential(t, seq, model, real, diffWorkload(seq.mode, ns, nodes), diffWorkload(seq.mode, namespace, nodes))
		})
	}
}

func runDifferential(t *testing.T, seq diffSequence, model *modelPlane, real *realPlane, modelObj, realObj client.Object) {
	for _, st := range seq.steps {
		do := st.do
		if do == nil {
			do = func(p plane) error {
				obj := modelObj
				if p == plane(real) {
					obj = realObj
				}
				return p.create(obj)
			}
		}
		if err := do(model); err != nil {
			t.Fatalf("%s, in the model: %v", st.name, err)
		}
		mt := model.run(st.settle)
		if err := do(real); err != nil {
			t.Fatalf("%s, on the real plane: %v", st.name, err)
		}
		rt, reached := real.until(mt[len(mt)-1].view, st.settle+realSlack)
		if msg := compareTraces(mt, rt, reached); msg != "" {
			t.Fatalf("after %q: %s\n    model (virtual time):\n%s    real control plane:\n%s\n%s",
				st.name, msg, formatTrace(mt), formatTrace(rt), real.cp.Logs())
		}
		t.Logf("after %q: the model and the real plane agree on %d views; the last:\n%s", st.name, len(mt), mt[len(mt)-1].view)
	}
}

// compareTraces returns what differs, "" when the traces agree.
func compareTraces(model, real []traced, reached bool) string {
	if !reached {
		return "the real control plane never reached the model's last view"
	}
	// The model's held views, in order, among the real ones.
	j := 0
	for _, m := range model[:len(model)-1] {
		if m.held < modelHeld {
			continue
		}
		for j < len(real) && real[j].view != m.view {
			j++
		}
		if j == len(real) {
			return fmt.Sprintf("the real control plane never showed, in this order, the model's view held %s:\n%s", m.held, m.view)
		}
	}
	// No real view held long that the model never shows.
	for _, r := range real {
		if r.held < realHeld || strings.Contains(r.view, string(corev1.PodPending)) {
			continue
		}
		if !slices.ContainsFunc(model, func(m traced) bool { return m.view == r.view }) {
			return fmt.Sprintf("the real control plane held for %s a view the model never shows:\n%s", r.held, r.view)
		}
	}
	return ""
}

// normalise renders the view of a workload, its ReplicaSets and pods; nodeState names the
// state of a pod's node: ready, unreachable, deleted (none for an unbound pod).
func normalise(c client.Reader, namespace string, nodeState func(string) string) (string, error) {
	ctx := context.Background()
	key := types.NamespacedName{Namespace: namespace, Name: resources.JobManagerName(name)}
	sel := client.MatchingLabels(resources.SelectorLabels(name, resources.ComponentJobManager))
	var lines []string
	var depUID types.UID
	dep := &appsv1.Deployment{}
	switch err := c.Get(ctx, key, dep); {
	case err == nil:
		depUID = dep.UID
		lines = append(lines, fmt.Sprintf("Deployment replicas=%d%s", ptr.Deref(dep.Spec.Replicas, 1), deleting(dep)))
	case !apierrors.IsNotFound(err):
		return "", err
	}
	job := &batchv1.Job{}
	switch err := c.Get(ctx, key, job); {
	case err == nil:
		var conds []string
		for _, cd := range job.Status.Conditions {
			if cd.Status == corev1.ConditionTrue {
				conds = append(conds, string(cd.Type))
			}
		}
		slices.Sort(conds)
		lines = append(lines, fmt.Sprintf("Job %s%s", strings.Join(conds, ","), deleting(job)))
	case !apierrors.IsNotFound(err):
		return "", err
	}
	rss := &appsv1.ReplicaSetList{}
	if err := c.List(ctx, rss, client.InNamespace(namespace), sel); err != nil {
		return "", err
	}
	for _, rs := range rss.Items {
		owner := "of the Deployment"
		if o := metav1.GetControllerOf(&rs); o == nil || o.UID != depUID {
			owner = "whose Deployment is gone"
		}
		lines = append(lines, fmt.Sprintf("ReplicaSet %s replicas=%d%s", owner, ptr.Deref(rs.Spec.Replicas, 1), deleting(&rs)))
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(namespace), sel); err != nil {
		return "", err
	}
	var podLines []string
	for _, p := range pods.Items {
		owner := "-"
		if o := metav1.GetControllerOf(&p); o != nil {
			owner = o.Kind
		}
		node := "none"
		if p.Spec.NodeName != "" {
			node = nodeState(p.Spec.NodeName)
		}
		var restarts int32
		for _, cs := range p.Status.ContainerStatuses {
			restarts += cs.RestartCount
		}
		line := fmt.Sprintf("pod of %s: %s ready=%t node=%s restarts=%d%s", owner, p.Status.Phase, isReady(&p), node, restarts, deleting(&p))
		if controllerutil.ContainsFinalizer(&p, batchv1.JobTrackingFinalizer) {
			line += " tracked"
		}
		podLines = append(podLines, line)
	}
	slices.Sort(podLines)
	if len(lines)+len(podLines) == 0 {
		return "(nothing)", nil
	}
	return strings.Join(append(lines, podLines...), "\n"), nil
}

func deleting(obj client.Object) string {
	if obj.GetDeletionTimestamp() != nil {
		return " Terminating"
	}
	return ""
}

// modelPlane is the model: a world whose controller never reconciles.
type modelPlane struct {
	t       *testing.T
	w       *world
	stopped *node
}

func newModelPlane(t *testing.T, mode v1beta1.JobManagerDeploymentType, nodes int) *modelPlane {
	w := newWorldWith(t, 1, &setup{mode: mode, build: func(fc *v1beta1.FlinkCluster) {
		fc.Spec.JobManager = diffCluster(mode).Spec.JobManager
	}})
	tm := defaultKubeTimings()
	// testenv.StartControlPlane's node monitor period.
	tm.nodes, tm.nodeMonitorGrace, tm.nodeMonitorPeriod = nodes, diffNodeMonitorGrace, 2*time.Second
	w.setKubeTimings(tm)
	return &modelPlane{t: t, w: w}
}

func (m *modelPlane) create(obj client.Object) error {
	return m.w.cl.Create(bg, obj.DeepCopyObject().(client.Object))
}

func (m *modelPlane) livePod() *corev1.Pod {
	for _, p := range m.w.jmPods() {
		if p.DeletionTimestamp == nil {
			return &p
		}
	}
	return nil
}

func (m *modelPlane) deletePod(force bool) error {
	p := m.livePod()
	if p == nil {
		return fmt.Errorf("no live JobManager pod")
	}
	if force {
		m.w.forceDeletePod(p)
	} else {
		m.w.deletePod(p)
	}
	return nil
}

func (m *modelPlane) targetNode() *node {
	if m.stopped != nil {
		return m.stopped
	}
	if p := m.livePod(); p != nil {
		return m.w.kubeModel().node(p.Spec.NodeName)
	}
	return nil
}

func (m *modelPlane) stopNode() error {
	n := m.targetNode()
	if n == nil {
		return fmt.Errorf("no node to stop")
	}
	m.stopped = n
	m.w.stopNode(n)
	return nil
}

func (m *modelPlane) startNode() error  { m.w.startNode(m.targetNode()); return nil }
func (m *modelPlane) deleteNode() error { m.w.deleteNode(m.targetNode()); return nil }

func (m *modelPlane) deleteWorkload() error {
	obj := deploymentMeta()
	if m.w.mode == v1beta1.JobManagerDeploymentTypeJob {
		obj = jobMeta()
	}
	return m.w.cl.Delete(bg, obj, client.PropagationPolicy(metav1.DeletePropagationBackground))
}

func (m *modelPlane) scale(replicas int32) error {
	d := &appsv1.Deployment{}
	if err := m.w.cl.Get(bg, client.ObjectKeyFromObject(deploymentMeta()), d); err != nil {
		return err
	}
	d.Spec.Replicas = ptr.To(replicas)
	return m.w.cl.Update(bg, d)
}

func (m *modelPlane) view() (string, error) {
	return normalise(m.w.cl, ns, func(n string) string {
		switch nd := m.w.kubeModel().node(n); {
		case nd == nil || nd.deleted:
			return "deleted"
		case nd.tainted:
			return "unreachable"
		}
		return "ready"
	})
}

// run ticks the model for settle, a second a tick, and returns the views it went through.
func (m *modelPlane) run(settle time.Duration) []traced {
	var tr []traced
	record := func(d time.Duration) {
		v, err := m.view()
		if err != nil {
			m.t.Fatal(err)
		}
		if len(tr) > 0 && tr[len(tr)-1].view == v {
			tr[len(tr)-1].held += d
			return
		}
		tr = append(tr, traced{view: v, held: d})
	}
	record(0)
	for elapsed := time.Duration(0); elapsed < settle; elapsed += time.Second {
		m.w.clock.Step(time.Second)
		m.w.kube()
		record(time.Second)
	}
	return tr
}

// realPlane is the real control plane, one namespace of it.
type realPlane struct {
	t       *testing.T
	cp      *testenv.ControlPlane
	c       client.Client
	ns      string
	stopped string
}

func newRealPlane(t *testing.T, cp *testenv.ControlPlane, c client.Client, namespace string) *realPlane {
	t.Helper()
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}
	// No pod is admitted before the service account controller made the namespace's default
	// ServiceAccount.
	deadline := time.Now().Add(time.Minute)
	for c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: "default"}, &corev1.ServiceAccount{}) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("no default ServiceAccount in %s", namespace)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return &realPlane{t: t, cp: cp, c: c, ns: namespace}
}

func (r *realPlane) create(obj client.Object) error {
	return r.c.Create(context.Background(), obj.DeepCopyObject().(client.Object))
}

func (r *realPlane) livePod() (*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := r.c.List(context.Background(), list, client.InNamespace(r.ns),
		client.MatchingLabels(resources.SelectorLabels(name, resources.ComponentJobManager))); err != nil {
		return nil, err
	}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			return &p, nil
		}
	}
	return nil, fmt.Errorf("no live JobManager pod")
}

func (r *realPlane) deletePod(force bool) error {
	p, err := r.livePod()
	if err != nil {
		return err
	}
	var opts []client.DeleteOption
	if force {
		opts = append(opts, client.GracePeriodSeconds(0))
	}
	return r.c.Delete(context.Background(), p, opts...)
}

func (r *realPlane) targetNode() (string, error) {
	if r.stopped != "" {
		return r.stopped, nil
	}
	p, err := r.livePod()
	if err != nil {
		return "", err
	}
	return p.Spec.NodeName, nil
}

func (r *realPlane) stopNode() error {
	n, err := r.targetNode()
	if err != nil {
		return err
	}
	r.stopped = n
	return r.cp.StopNode(n)
}

func (r *realPlane) startNode() error {
	n, err := r.targetNode()
	if err != nil {
		return err
	}
	return r.cp.StartNode(n)
}

func (r *realPlane) deleteNode() error {
	n, err := r.targetNode()
	if err != nil {
		return err
	}
	return r.cp.DeleteNode(context.Background(), n)
}

func (r *realPlane) deleteWorkload() error {
	var obj client.Object = &appsv1.Deployment{}
	if r.kind() == v1beta1.JobManagerDeploymentTypeJob {
		obj = &batchv1.Job{}
	}
	obj.SetNamespace(r.ns)
	obj.SetName(resources.JobManagerName(name))
	return r.c.Delete(context.Background(), obj, client.PropagationPolicy(metav1.DeletePropagationBackground))
}

func (r *realPlane) kind() v1beta1.JobManagerDeploymentType {
	if r.c.Get(context.Background(), types.NamespacedName{Namespace: r.ns, Name: resources.JobManagerName(name)}, &batchv1.Job{}) == nil {
		return v1beta1.JobManagerDeploymentTypeJob
	}
	return v1beta1.JobManagerDeploymentTypeDeployment
}

func (r *realPlane) scale(replicas int32) error {
	d := &appsv1.Deployment{}
	if err := r.c.Get(context.Background(), types.NamespacedName{Namespace: r.ns, Name: resources.JobManagerName(name)}, d); err != nil {
		return err
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = ptr.To(replicas)
	return r.c.Patch(context.Background(), d, patch)
}

func (r *realPlane) view() (string, error) {
	return normalise(r.c, r.ns, func(n string) string {
		nd := &corev1.Node{}
		if err := r.c.Get(context.Background(), types.NamespacedName{Name: n}, nd); err != nil {
			return "deleted"
		}
		for _, c := range nd.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
				return "unreachable"
			}
		}
		return "ready"
	})
}

// until polls the real plane until it shows want and holds it for a second, or bound passes;
// it returns the views it saw and whether it got there.
func (r *realPlane) until(want string, bound time.Duration) ([]traced, bool) {
	var tr []traced
	start, last := time.Now(), time.Now()
	for {
		v, err := r.view()
		if err != nil {
			r.t.Fatal(err)
		}
		now := time.Now()
		if len(tr) > 0 {
			tr[len(tr)-1].held += now.Sub(last)
		}
		last = now
		if len(tr) == 0 || tr[len(tr)-1].view != v {
			tr = append(tr, traced{view: v})
		}
		if e := tr[len(tr)-1]; e.view == want && e.held >= time.Second {
			return tr, true
		}
		if now.Sub(start) > bound {
			return tr, false
		}
		time.Sleep(100 * time.Millisecond)
	}
}
