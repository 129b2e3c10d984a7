package realplane_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
)

const (
	jobMode = v1beta1.JobManagerDeploymentTypeJob
	depMode = v1beta1.JobManagerDeploymentTypeDeployment
	// waitTimeout bounds every wait: generous, since a loaded 2-core machine runs the whole
	// control plane and a dozen rows at once.
	waitTimeout = 2 * time.Minute
	// graceSeconds is the JobManager pods' termination grace period: long enough for a row to
	// hold a deleted pod in its preStop hook (hold) before KWOK kills it.
	graceSeconds = 120
)

var nsSeq atomic.Int64

// harness is one FlinkCluster in its own namespace on the shared control plane, with its fake
// Flink: the JobManager processes the Simulator starts for the cluster's pods elect their
// leader, store job graphs and checkpoint pointers in Flink's HA ConfigMaps on the real API
// server (KubeHA), and keep job results in their job result store.
type harness struct {
	t    *testing.T
	ctx  context.Context
	mode v1beta1.JobManagerDeploymentType
	ns   string
	name string
	// flink is the cluster's Flink.
	flink *fakeflink.Cluster
	// nodes are the row's own nodes (ownNodes); its JobManager pods run on them only.
	nodes []string
}

// newHarness creates a FlinkCluster in a fresh namespace. The fixture cluster is an
// application cluster with Kubernetes HA and cleanup DeleteCluster for every outcome, a
// preStop delay of 1 s in Deployment mode and a grace period of graceSeconds; build adjusts
// it. prepare runs before the cluster is created (a program for main(), a failing start), so
// that the first JobManager already sees it.
func newHarness(t *testing.T, mode v1beta1.JobManagerDeploymentType, build func(w *builder.FlinkClusterWrapper), prepare ...func(h *harness)) *harness {
	t.Helper()
	h := newRow(t, mode, strings.ToLower(string(mode)))
	w := builder.MakeAppCluster(h.name).Namespace(h.ns).UID("").Grace(graceSeconds)
	if mode == depMode {
		// A preStop delay the Simulator runs on the real clock: short, to keep rows fast.
		w.Deployment().PreStop(1)
	}
	if build != nil {
		build(w)
	}
	fc := w.Obj()
	h.newFlink(fc)
	for _, p := range prepare {
		p(h)
	}
	if len(h.nodes) > 0 {
		w.JobManager(func(jm *v1beta1.JobManagerSpec) {
			jm.NodeSelector = map[string]string{rowNodeKey: h.ns}
			jm.Tolerations = append(jm.Tolerations, corev1.Toleration{Key: rowNodeKey, Operator: corev1.TolerationOpEqual, Value: h.ns, Effect: corev1.TaintEffectNoSchedule})
		})
		fc = w.Obj()
	}
	require.NoError(t, k8s.Create(h.ctx, fc))
	return h
}

// newRow returns the harness of a row in a namespace of its own, named t<n>-<suffix>.
func newRow(t *testing.T, mode v1beta1.JobManagerDeploymentType, suffix string) *harness {
	t.Helper()
	h := &harness{t: t, ctx: context.Background(), name: "wc", mode: mode}
	h.ns = fmt.Sprintf("t%d-%s", nsSeq.Add(1), suffix)
	require.NoError(t, k8s.Create(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.ns}}))
	return h
}

// newFlink gives the row the fake Flink of cluster fc (its HA cluster ID and Flink version),
// and, when the row ends, checks what Flink must never do and removes the row's traces.
func (h *harness) newFlink(fc *v1beta1.FlinkCluster) {
	t := h.t
	h.flink = fakeflink.NewCluster(fakeflink.Options{
		ClusterID: resources.HAClusterID(fc), Version: fakeflink.Version(fc.Spec.FlinkVersion),
		HA: &fakeflink.KubeHA{Client: k8s, Namespace: h.ns},
		// The controller's clock: it judges the leader's lease by the time Flink renews it on.
		// A row that advances it (a lease expiring) moves it for every row: their live
		// leaders renew on their next REST call.
		Clock:   fakeClock,
		Program: fakeflink.Program{JobName: "wordcount"},
	})
	fakes.Store(h.ns+"/"+h.name, h.flink)
	t.Cleanup(func() {
		if t.Failed() {
			h.dump()
		}
		assert.Empty(t, h.flink.Violations(), "what Flink must never do to a job (rerun after its end, two runs at once)")
		startupFailures.Delete(h.ns)
		h.retire()
		fakes.Delete(h.ns + "/" + h.name)
		h.flink.Close()
	})
}

// rowNodeKey labels and taints a row's own nodes with the row's namespace.
const rowNodeKey = "flink-admission.dev/row"

// ownNodes gives the row n KWOK nodes of its own (call it from a row's prepare): labelled and
// tainted so that only this row's JobManager pods run there. A row that stops, deletes or
// cordons a node then touches no other row's pods, and runs in parallel with them. The nodes
// are deleted when the row ends.
func (h *harness) ownNodes(n int) {
	h.t.Helper()
	for i := range n {
		name := fmt.Sprintf("%s-node-%d", h.ns, i)
		require.NoError(h.t, cp.AddNode(h.ctx, name, testenv.ReservedFor(rowNodeKey, h.ns)))
		h.t.Cleanup(func() {
			stopped.Delete(name)
			assert.NoError(h.t, cp.DeleteNode(context.Background(), name))
		})
		h.nodes = append(h.nodes, name)
	}
}

// cordon marks the row's own nodes unschedulable (or schedulable again).
func (h *harness) cordon(unschedulable bool) {
	h.t.Helper()
	for _, name := range h.nodes {
		require.NoError(h.t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			node := &corev1.Node{}
			if err := k8s.Get(context.Background(), types.NamespacedName{Name: name}, node); err != nil {
				return client.IgnoreNotFound(err)
			}
			node.Spec.Unschedulable = unschedulable
			return k8s.Update(context.Background(), node)
		}))
	}
}

// retire removes the FlinkCluster and its namespace once the row is done, finalizer and all,
// so that the controller stops polling a job the row left running and the control plane
// removes its pods.
func (h *harness) retire() {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fc := &v1beta1.FlinkCluster{}
		if err := k8s.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: h.name}, fc); err != nil {
			return client.IgnoreNotFound(err)
		}
		if len(fc.Finalizers) > 0 {
			// A merge patch without the resourceVersion: the controller's status writes go on
			// meanwhile, and an update lost to them again and again failed the row's clean-up.
			base := fc.DeepCopy()
			fc.Finalizers = nil
			if err := k8s.Patch(h.ctx, fc, client.MergeFrom(base)); err != nil {
				return client.IgnoreNotFound(err)
			}
		}
		return client.IgnoreNotFound(k8s.Delete(h.ctx, fc))
	})
	assert.NoError(h.t, err, "removing the FlinkCluster after the row")
	assert.NoError(h.t, client.IgnoreNotFound(k8s.Delete(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.ns}})))
}

func (h *harness) deployment() bool { return h.mode == depMode }

func (h *harness) get() *v1beta1.FlinkCluster {
	h.t.Helper()
	fc := &v1beta1.FlinkCluster{}
	require.NoError(h.t, k8s.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: h.name}, fc))
	return fc
}

// job is the job's status, empty before the controller recorded one.
func (h *harness) job() v1beta1.JobStatus {
	h.t.Helper()
	if j := h.get().Status.Components.Job; j != nil {
		return *j
	}
	return v1beta1.JobStatus{}
}

// jobID is the job ID of the current deploy, which the controller records in the status
// before it creates the JobManager workload.
func (h *harness) jobID() string { h.t.Helper(); return h.job().ID }

func (h *harness) jobState() string { h.t.Helper(); return h.job().State }

// eventually waits until cond holds; the row fails after waitTimeout.
// keepCrashing kills each process of pod's container as soon as the Simulator starts it, as
// the kubelet sees a container that exits before Flink's REST API is up, until the returned
// function is called (or the row ends).
func (h *harness) keepCrashing(pod *corev1.Pod) (stop func()) {
	done := make(chan struct{})
	stop = sync.OnceFunc(func() { close(done) })
	h.t.Cleanup(stop)
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if p := sim.Process(h.ns, pod.Name); p != nil && p.Alive() {
				p.Kill()
			}
		}
	}()
	return stop
}

func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// afterReconciles checks that cond holds once the controller has looked at the cluster again,
// twice, after everything the row did so far, and once the Simulator took in every pod event
// since: no real time is watched, the row waits on acknowledgements (see reconciled).
func (h *harness) afterReconciles(what string, cond func() bool) {
	h.t.Helper()
	for range 2 {
		h.reconciled()
		require.NoError(h.t, sim.Settle(h.ctx))
		if !cond() {
			h.t.Fatalf("expected %s to hold after the controller reconciled again", what)
		}
	}
}

// reconciled pokes the cluster with a spec change the controller ignores
// (spec.job.autoSavepointSeconds: not part of the revision, no behaviour) and waits until a
// reconcile stamped the cluster's conditions with the new generation.
func (h *harness) reconciled() {
	h.t.Helper()
	h.patch(func(fc *v1beta1.FlinkCluster) {
		n := int32(1)
		if p := fc.Spec.Job.AutoSavepointSeconds; p != nil {
			n = *p + 1
		}
		fc.Spec.Job.AutoSavepointSeconds = &n
	})
	gen := h.get().Generation
	h.eventually(fmt.Sprintf("a reconcile of generation %d", gen), func() bool {
		fc := h.get()
		if len(fc.Status.Conditions) == 0 {
			return false
		}
		for _, c := range fc.Status.Conditions {
			if c.ObservedGeneration < gen {
				return false
			}
		}
		return true
	})
}

// waitJob waits for the job state and returns the cluster in it.
func (h *harness) waitJob(state string) *v1beta1.FlinkCluster {
	h.t.Helper()
	h.eventually("job state "+state, func() bool { return h.jobState() == state })
	return h.get()
}

// waitCluster waits for the cluster state and returns the cluster in it.
func (h *harness) waitCluster(state string) *v1beta1.FlinkCluster {
	h.t.Helper()
	h.eventually("cluster state "+state, func() bool { return h.get().Status.State == state })
	return h.get()
}

// conditionState is a condition as "Type=Status/Reason".
func conditionState(c metav1.Condition) string {
	return fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason)
}

// missingConditions returns the wanted conditions ("Type=Status/Reason") fc does not have,
// and conditions not stamped with fc's generation.
func missingConditions(fc *v1beta1.FlinkCluster, want []string) []string {
	var missing []string
	for _, w := range want {
		typ, _, _ := strings.Cut(w, "=")
		c := meta.FindStatusCondition(fc.Status.Conditions, typ)
		switch {
		case c == nil:
			missing = append(missing, w+" (absent)")
		case conditionState(*c) != w:
			missing = append(missing, w+" (is "+conditionState(*c)+")")
		case c.ObservedGeneration != fc.Generation:
			missing = append(missing, fmt.Sprintf("%s (observedGeneration %d, generation %d)", w, c.ObservedGeneration, fc.Generation))
		}
	}
	return missing
}

// waitConditions waits until the cluster has every wanted condition ("Type=Status/Reason",
// e.g. "Lost=False/JobTracked"), each stamped with the cluster's generation.
func (h *harness) waitConditions(want ...string) *v1beta1.FlinkCluster {
	h.t.Helper()
	var missing []string
	h.eventually(fmt.Sprintf("conditions %v", want), func() bool {
		missing = missingConditions(h.get(), want)
		return len(missing) == 0
	})
	return h.get()
}

// condition returns the cluster's condition of type typ; the row fails when it is absent.
func (h *harness) condition(typ string) metav1.Condition {
	h.t.Helper()
	c := meta.FindStatusCondition(h.get().Status.Conditions, typ)
	require.NotNil(h.t, c, "condition %s", typ)
	return *c
}

// steady are the conditions of a job running undisturbed.
var steady = []string{
	"Managed=True/ApplicationMode", "JobManagerReady=True/PodReady", "Updating=False/UpToDate",
	"DeploymentFailed=False/NoFailure", "Lost=False/JobTracked",
}

// workload returns the JobManager Job or Deployment, nil when missing.
func (h *harness) workload() client.Object {
	h.t.Helper()
	var obj client.Object = &batchv1.Job{}
	if h.deployment() {
		obj = &appsv1.Deployment{}
	}
	err := k8s.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: resources.JobManagerName(h.name)}, obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(h.t, err)
	return obj
}

// jmDeployment returns the JobManager Deployment, nil when missing.
func (h *harness) jmDeployment() *appsv1.Deployment {
	d := &appsv1.Deployment{}
	if err := k8s.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: resources.JobManagerName(h.name)}, d); err != nil {
		return nil
	}
	return d
}

// waitWorkload waits for a JobManager workload other than the one with UID not.
func (h *harness) waitWorkload(not types.UID) client.Object {
	h.t.Helper()
	var wl client.Object
	h.eventually("a new JobManager workload", func() bool {
		wl = h.workload()
		return wl != nil && wl.GetUID() != not && wl.GetDeletionTimestamp() == nil
	})
	return wl
}

func podTemplate(wl client.Object) corev1.PodTemplateSpec {
	switch w := wl.(type) {
	case *batchv1.Job:
		return w.Spec.Template
	case *appsv1.Deployment:
		return w.Spec.Template
	}
	panic(fmt.Sprintf("unexpected workload %T", wl))
}

// jmPods are the cluster's JobManager pods, Terminating ones included.
func (h *harness) jmPods() []corev1.Pod {
	h.t.Helper()
	list := &corev1.PodList{}
	require.NoError(h.t, k8s.List(h.ctx, list, client.InNamespace(h.ns),
		client.MatchingLabels(resources.SelectorLabels(h.name, resources.ComponentJobManager))))
	return list.Items
}

// runningPod waits for a JobManager pod, other than those in not, whose container runs (the
// real controllers made it, the scheduler bound it to a KWOK node, KWOK started it) and whose
// simulated JobManager process is alive.
func (h *harness) runningPod(not ...types.UID) (*corev1.Pod, *fakeflink.JobManager) {
	h.t.Helper()
	var pod *corev1.Pod
	var jm *fakeflink.JobManager
	h.eventually("a running JobManager pod with its process", func() bool {
		for _, p := range h.jmPods() {
			if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || slices.Contains(not, p.UID) {
				continue
			}
			if jm = sim.Process(h.ns, p.Name); jm != nil && jm.Alive() {
				pod = &p
				return true
			}
		}
		return false
	})
	return pod, jm
}

// podNow is the pod as it is now, and whether it still exists.
func (h *harness) podNow(pod *corev1.Pod) (*corev1.Pod, bool) {
	h.t.Helper()
	p := &corev1.Pod{}
	err := k8s.Get(h.ctx, client.ObjectKeyFromObject(pod), p)
	if apierrors.IsNotFound(err) || (err == nil && p.UID != pod.UID) {
		return nil, false
	}
	require.NoError(h.t, err)
	return p, true
}

func (h *harness) podExists(pod *corev1.Pod) bool { h.t.Helper(); _, ok := h.podNow(pod); return ok }

// process is the JobManager process of pod's current container; the row fails when none runs.
func (h *harness) process(pod *corev1.Pod) *fakeflink.JobManager {
	h.t.Helper()
	if p := sim.Process(h.ns, pod.Name); p != nil {
		return p
	}
	if p := h.flink.Process(pod.Name); p != nil {
		return p
	}
	h.t.Fatalf("no JobManager process for pod %s", pod.Name)
	return nil
}

// leader is the JobManager process that leads the cluster now.
func (h *harness) leader() *fakeflink.JobManager {
	h.t.Helper()
	var l *fakeflink.JobManager
	h.eventually("a leading JobManager", func() bool { l = h.flink.Leader(); return l != nil })
	return l
}

// hold keeps pod's container in its preStop hook once the pod is deleted: it stays
// Terminating, its JobManager running (and leading), until release or the end of its grace
// period (graceSeconds).
func (h *harness) hold(pod *corev1.Pod) {
	held.Store(pod.UID, true)
	h.t.Cleanup(func() { held.Delete(pod.UID) })
}

// release ends a held pod's preStop hook: the kubelet then sends SIGTERM.
func (h *harness) release(pod *corev1.Pod) { held.Delete(pod.UID) }

// failStartup makes every JobManager container of the cluster fail its start with status
// (nil: start normally again): an entrypoint that dies before Flink runs, which the
// Simulator writes as the kubelet would.
func (h *harness) failStartup(status *fakeflink.ExitStatus) {
	if status == nil {
		startupFailures.Delete(h.ns)
		return
	}
	startupFailures.Store(h.ns, status)
}

// runJob brings the job to Running on the first JobManager pod: the workload's pod, made by
// the real ReplicaSet or Job controller, runs on a KWOK node; its JobManager runs main(),
// which submits the job under the deploy's job ID and stores its graph in HA.
func (h *harness) runJob() (client.Object, *corev1.Pod) {
	h.t.Helper()
	wl := h.waitWorkload("")
	pod, jm := h.runningPod()
	h.waitJob(v1beta1.JobStateRunning)
	h.waitCluster(v1beta1.ClusterStateRunning)
	h.waitConditions(steady...)
	require.Equal(h.t, flinkclient.JobStateRunning, jm.JobState(h.jobID()))
	return wl, pod
}

// recoveredOn checks that the job runs again under id, recovered from HA by the JobManager of
// a pod other than those in not.
func (h *harness) recoveredOn(id string, not ...types.UID) *corev1.Pod {
	h.t.Helper()
	pod, jm := h.runningPod(not...)
	if !jm.Leads() {
		// A dead leader's lease runs out on Flink's clock only: move it past the lease, once
		// (the clock is shared: every step is every row's).
		h.flink.Advance(16 * time.Second)
	}
	// Leader() runs an election now, rather than at the next REST call.
	h.eventually("the new JobManager leading", func() bool { h.flink.Leader(); return jm.Leads() })
	h.eventually("the job Running again with its job ID", func() bool {
		j := h.job()
		return j.State == v1beta1.JobStateRunning && j.ID == id && jm.JobState(id) == flinkclient.JobStateRunning
	})
	return pod
}

// noFailure checks that the job carries no failure reason.
func (h *harness) noFailure() {
	h.t.Helper()
	assert.Empty(h.t, h.job().FailureReasons, "no failure recorded")
}

// executionState is how Flink's latest execution of the job ended ("" while it runs).
func (h *harness) executionState(jobID string) string {
	state := ""
	for _, e := range h.flink.Executions() {
		if e.JobID == jobID {
			state = e.State
		}
	}
	return state
}

// countRequests counts the Flink REST calls the controller made, as exactly "METHOD /path".
func (h *harness) countRequests(call string) int {
	n := 0
	for _, r := range h.flink.ServiceRequests() {
		if r == call {
			n++
		}
	}
	return n
}

// requests counts the Flink calls of one kind for the job.
func (h *harness) requests(method, suffix string) int {
	h.t.Helper()
	return h.countRequests(method + " /jobs/" + h.jobID() + suffix)
}

// configuredSavepoint is the savepoint a fresh main() of the JobManager restores: the one
// the cluster's Flink configuration ConfigMap names.
func (h *harness) configuredSavepoint() string {
	h.t.Helper()
	cm := &corev1.ConfigMap{}
	require.NoError(h.t, k8s.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: resources.ConfigMapName(h.name)}, cm))
	conf := map[string]string{}
	require.NoError(h.t, yaml.Unmarshal([]byte(cm.Data[resources.ConfigFileName(h.get())]), &conf))
	return conf[resources.KeySavepointPath]
}

// restoresFrom checks that a new JobManager workload restores savepoint loc through the Flink
// configuration, and that its long-lived pod template names no savepoint.
func (h *harness) restoresFrom(wl client.Object, loc string) {
	h.t.Helper()
	args := strings.Join(podTemplate(wl).Spec.Containers[0].Args, " ")
	require.NotContains(h.t, args, "--fromSavepoint", "no savepoint in the pod template: a restart would restore it again")
	// The configuration names it until the controller saw the job run (then it leaves the
	// configuration: savepointLeavesConfiguration), or the execution already restored it.
	h.eventually("the deploy restoring savepoint "+loc+" through its Flink configuration", func() bool {
		if h.configuredSavepoint() == loc {
			return true
		}
		id := h.jobID()
		for _, e := range h.flink.Executions() {
			if e.JobID == id && e.RestoredFrom == loc {
				return true
			}
		}
		return false
	})
}

// savepointLeavesConfiguration waits, once the job of workload wl runs, for the savepoint to
// leave the Flink configuration, and checks that the workload was not changed for it (a new
// pod template would replace the JobManager).
func (h *harness) savepointLeavesConfiguration(wl client.Object) {
	h.t.Helper()
	// In Deployment mode with HA, ResumeFromHAOnly takes its place.
	want := ""
	if fc := h.get(); fc.Spec.GetDeploymentType() == v1beta1.JobManagerDeploymentTypeDeployment {
		want = controller.ResumeFromHAOnly
	}
	h.eventually("the savepoint taken out of the Flink configuration", func() bool { return h.configuredSavepoint() == want })
	cur := h.workload()
	require.NotNil(h.t, cur)
	require.Equal(h.t, wl.GetUID(), cur.GetUID())
	require.Equal(h.t, podTemplate(wl), podTemplate(cur), "the JobManager's pod template is unchanged")
}

// annotate sets the user-control annotation.
func (h *harness) annotate(control string) {
	h.t.Helper()
	h.patch(func(fc *v1beta1.FlinkCluster) {
		if fc.Annotations == nil {
			fc.Annotations = map[string]string{}
		}
		fc.Annotations[v1beta1.ControlAnnotation] = control
	})
}

// patch changes the cluster as a user would (kubectl patch --type=merge), from its latest
// version: without the resourceVersion, so that the controller's status writes, which a row
// whose stop keeps failing makes many, cannot make it conflict.
func (h *harness) patch(mutate func(fc *v1beta1.FlinkCluster)) {
	h.t.Helper()
	require.NoError(h.t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fc := h.get()
		base := fc.DeepCopy()
		mutate(fc)
		return k8s.Patch(h.ctx, fc, client.MergeFrom(base))
	}))
}

// events are the Events about the FlinkCluster.
func (h *harness) events() []eventsv1.Event {
	h.t.Helper()
	list := &eventsv1.EventList{}
	require.NoError(h.t, k8s.List(h.ctx, list, client.InNamespace(h.ns)))
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == v1beta1.Kind && e.Regarding.Name == h.name {
			out = append(out, e)
		}
	}
	return out
}

// waitEvent waits for an Event of type and reason whose note contains text.
func (h *harness) waitEvent(eventType, reason, text string) {
	h.t.Helper()
	h.eventually(fmt.Sprintf("%s Event %s containing %q", eventType, reason, text), func() bool {
		for _, e := range h.events() {
			if e.Type == eventType && e.Reason == reason && strings.Contains(e.Note, text) {
				return true
			}
		}
		return false
	})
}

// exists reports whether the named object exists.
func (h *harness) exists(obj client.Object, name string) bool {
	h.t.Helper()
	err := k8s.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(h.t, err)
	return true
}

func (h *harness) taskManagerExists() bool {
	return h.exists(&appsv1.Deployment{}, resources.TaskManagerName(h.name)) ||
		h.exists(&appsv1.StatefulSet{}, resources.TaskManagerName(h.name))
}

// allGone reports whether the cluster's objects (JobManager workload and pods, TaskManagers,
// Service, ConfigMap) are gone.
func (h *harness) allGone() bool {
	return h.workload() == nil && len(h.jmPods()) == 0 && !h.taskManagerExists() &&
		!h.exists(&corev1.Service{}, resources.JobManagerName(h.name)) &&
		!h.exists(&corev1.ConfigMap{}, resources.ConfigMapName(h.name))
}

// dump logs what a failed row left: the cluster, Events, pods, Flink's requests, executions
// and processes, and the control plane's logs.
func (h *harness) dump() {
	fc := &v1beta1.FlinkCluster{}
	if err := k8s.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: h.name}, fc); err == nil {
		h.t.Logf("cluster: generation %d, resourceVersion %s, finalizers %v, created %s", fc.Generation, fc.ResourceVersion, fc.Finalizers, fc.CreationTimestamp)
		h.t.Logf("status: %+v", fc.Status)
		if j := fc.Status.Components.Job; j != nil {
			h.t.Logf("job: %+v", *j)
		}
		if sp := fc.Status.Savepoint; sp != nil {
			h.t.Logf("savepoint: %+v", *sp)
		}
	}
	list := &eventsv1.EventList{}
	if err := k8s.List(h.ctx, list, client.InNamespace(h.ns)); err == nil {
		for _, e := range list.Items {
			h.t.Logf("event %s %s %s/%s: %s", e.Type, e.Reason, e.Regarding.Kind, e.Regarding.Name, e.Note)
		}
	}
	if wl := h.workload(); wl != nil {
		switch w := wl.(type) {
		case *batchv1.Job:
			h.t.Logf("Job %s: deleting %t, status %+v", w.Name, w.DeletionTimestamp != nil, w.Status)
		case *appsv1.Deployment:
			h.t.Logf("Deployment %s: deleting %t, replicas %v, status %+v", w.Name, w.DeletionTimestamp != nil, w.Spec.Replicas, w.Status)
		}
	}
	pods := &corev1.PodList{}
	if err := k8s.List(h.ctx, pods, client.InNamespace(h.ns)); err == nil {
		for _, p := range pods.Items {
			h.t.Logf("pod %s on %s: phase %s, deleting %t, finalizers %v, statuses %+v", p.Name, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil, p.Finalizers, p.Status.ContainerStatuses)
		}
	}
	h.t.Logf("flink requests: %v", h.flink.ServiceRequests())
	for _, e := range h.flink.Executions() {
		h.t.Logf("flink execution: %+v", e)
	}
	for _, p := range h.flink.Processes() {
		h.t.Logf("flink process %s: alive %t, leads %t, jobs %v", p.Name(), p.Alive(), p.Leads(), p.JobIDs())
	}
	h.t.Log(cp.Logs())
}

// runningJob is runJob for rows that need the pod's process and the job ID.
func (h *harness) runningJob() (*corev1.Pod, *fakeflink.JobManager, string) {
	h.t.Helper()
	_, pod := h.runJob()
	return pod, h.process(pod), h.jobID()
}
