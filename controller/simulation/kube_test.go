package simulation_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/flink-admission/flink-admission/controller/resources"
)

var bg = context.Background()

// kubeTimings are the timings of the model's Kubernetes: kube-controller-manager's and the
// kubelet's defaults, unless a test matches them to a real control plane's.
type kubeTimings struct {
	// nodes is how many nodes the scheduler binds pods to.
	nodes int
	// nodeMonitorGrace is how long a node's heartbeats may stop before the node lifecycle
	// controller marks it unreachable, taints it and marks its pods not ready
	// (--node-monitor-grace-period).
	nodeMonitorGrace time.Duration
	// nodeMonitorPeriod is how often the node lifecycle controller looks at the nodes: a node
	// whose heartbeats resumed is Ready again, its taints lifted, within a period
	// (--node-monitor-period).
	nodeMonitorPeriod time.Duration
	// podGCQuarantine is how long pod garbage collection leaves the pods of a deleted node
	// before it fails and force-deletes them (40 s, checked every 20 s: 40 to 60 s).
	podGCQuarantine time.Duration
	// backOff and maxBackOff are the kubelet's crash-loop back-off: the first restart at
	// once, then backOff doubling up to maxBackOff.
	backOff, maxBackOff time.Duration
	// kubeletNotice is how long a kubelet takes to notice that a pod it runs was removed from
	// the API (a force delete) and stop its container.
	kubeletNotice time.Duration
}

// defaultKubeTimings are Kubernetes' defaults.
func defaultKubeTimings() kubeTimings {
	return kubeTimings{nodes: 3, nodeMonitorGrace: 50 * time.Second, nodeMonitorPeriod: 5 * time.Second, podGCQuarantine: 40 * time.Second,
		backOff: 10 * time.Second, maxBackOff: 5 * time.Minute, kubeletNotice: 2 * time.Second}
}

// defaultTolerationSeconds is the API server's DefaultTolerationSeconds admission: a pod that
// does not tolerate a not-ready or unreachable node gets a 300 s toleration of both.
const defaultTolerationSeconds int64 = 300

// node is one node of the model. Nodes are not API objects here (the controller reads none):
// what the node lifecycle controller writes to pods is modelled, the Node object is not.
type node struct {
	name string
	// down: its heartbeats stopped (power or network lost); nothing updates its pods, and
	// its processes run on, cut off.
	down   bool
	downAt time.Time
	// tainted: the node lifecycle controller marked it unreachable (taints
	// node.kubernetes.io/unreachable NoSchedule and NoExecute) at taintedAt; upAt is when
	// its heartbeats resumed.
	tainted   bool
	taintedAt time.Time
	upAt      time.Time
	// deleted: the Node object is gone, with the machine and its processes.
	deleted   bool
	deletedAt time.Time
}

// podRun is what a pod's kubelet keeps besides the container (proc): its crash-loop back-off
// and, for a deleted pod, whether it wrote the terminal phase.
type podRun struct {
	node string
	// backOff is the next restart's delay; down is set while the exited container waits for
	// its restart at restartAt; lastRestart is when the kubelet last restarted it.
	backOff     time.Duration
	down        bool
	exitedAt    time.Time
	restartAt   time.Time
	lastRestart time.Time
	// terminal: the kubelet wrote the terminal phase of the deleted pod; it deletes the pod
	// (grace 0) at its next sync.
	terminal bool
	// goneAt is when the kubelet noticed that the pod was removed from the API while its
	// container ran (a force delete).
	goneAt time.Time
}

// kubeModel is the state of the model's Kubernetes that is not in its API server.
type kubeModel struct {
	timings kubeTimings
	nodes   []*node
	runs    map[string]*podRun
	rsSeq   int
}

// kubeModel returns the world's Kubernetes state, made on first use with Kubernetes'
// default timings (setKubeTimings changes them before the first tick).
func (w *world) kubeModel() *kubeModel {
	if w.k == nil {
		w.setKubeTimings(defaultKubeTimings())
	}
	return w.k
}

// setKubeTimings sets the timings and the nodes of the model.
func (w *world) setKubeTimings(t kubeTimings) {
	k := &kubeModel{timings: t, runs: map[string]*podRun{}}
	for i := range t.nodes {
		k.nodes = append(k.nodes, &node{name: fmt.Sprintf("node-%d", i)})
	}
	w.k = k
}

func (k *kubeModel) node(name string) *node {
	for _, n := range k.nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

func (k *kubeModel) run(pod string) *podRun {
	r := k.runs[pod]
	if r == nil {
		r = &podRun{}
		k.runs[pod] = r
	}
	return r
}

// jmPods lists the JobManager pods. The list is kept until the next write to the API server
// (the model asks for it on every Flink REST call); callers must not change it.
func (w *world) jmPods() []corev1.Pod {
	if v := w.cl.version(); v != w.podsVersion {
		list := &corev1.PodList{}
		w.must(w.cl.List(bg, list, client.InNamespace(ns), client.MatchingLabels(resources.SelectorLabels(name, resources.ComponentJobManager))))
		w.pods, w.podsVersion = list.Items, v
	}
	return w.pods
}

// replicaSets lists the JobManager ReplicaSets.
func (w *world) replicaSets() []appsv1.ReplicaSet {
	list := &appsv1.ReplicaSetList{}
	w.must(w.cl.List(bg, list, client.InNamespace(ns), client.MatchingLabels(resources.SelectorLabels(name, resources.ComponentJobManager))))
	return list.Items
}

// must stops the sequence on an error of the model itself (run recovers it).
func (w *world) must(err error) {
	if err != nil {
		panic(modelError{err})
	}
}

type modelError struct{ error }

func deploymentMeta() client.Object {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: resources.JobManagerName(name)}}
}

func jobMeta() client.Object {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: resources.JobManagerName(name)}}
}

// kube runs the Kubernetes controllers and kubelets of the model once, each on what the API
// server held at the start of the tick where a race matters: a ReplicaSet whose Deployment is
// gone still makes a pod in the tick the garbage collector deletes it, and that pod goes one
// tick later (the worse branch of the real race). In order: the node lifecycle and taint
// eviction controllers, pod garbage collection, the garbage collector, the Deployment,
// ReplicaSet and Job controllers, the scheduler, the kubelets.
func (w *world) kube() {
	w.kubeModel()
	jmName := resources.JobManagerName(name)
	dep := &appsv1.Deployment{}
	hasDep := w.cl.Get(bg, types.NamespacedName{Namespace: ns, Name: jmName}, dep) == nil
	job := &batchv1.Job{}
	hasJob := w.cl.Get(bg, types.NamespacedName{Namespace: ns, Name: jmName}, job) == nil
	rss := w.replicaSets()
	pods := w.jmPods()

	w.nodeLifecycle(pods)
	w.podGC(pods)
	w.collectGarbage(rss, pods, hasDep, dep, hasJob, job)
	if hasDep && dep.DeletionTimestamp == nil {
		w.deploymentController(dep, rss)
	}
	w.replicaSetController(rss)
	if hasJob {
		w.jobController(job)
	}
	w.schedule()
	w.kubelets()
}

// nodeLifecycle: a node whose heartbeats stopped for the monitor grace period is tainted
// unreachable and its pods marked not ready; a pod on a tainted node is evicted (deleted,
// with its grace period) once its toleration of the taint ran out.
func (w *world) nodeLifecycle(pods []corev1.Pod) {
	k, now := w.k, w.clock.Now()
	for _, n := range k.nodes {
		if n.down && !n.tainted && !n.deleted && now.Sub(n.downAt) >= k.timings.nodeMonitorGrace {
			n.tainted, n.taintedAt = true, now
			w.log("node %s unreachable: tainted, its pods not ready", n.name)
		}
		if !n.down && n.tainted && now.Sub(n.upAt) >= k.timings.nodeMonitorPeriod {
			n.tainted = false
			w.log("node %s Ready again: taints lifted", n.name)
		}
	}
	for i := range pods {
		p := &pods[i]
		n := k.node(p.Spec.NodeName)
		if n == nil || !n.tainted || !n.down || n.deleted {
			continue
		}
		if isReady(p) {
			cur := p.DeepCopy()
			setReady(cur, corev1.ConditionFalse, "NodeNotReady")
			w.must(client.IgnoreNotFound(w.cl.Status().Update(bg, cur)))
		}
		if p.DeletionTimestamp != nil {
			continue
		}
		if secs, ok := unreachableToleration(p); !ok || (secs != nil && !now.Before(n.taintedAt.Add(time.Duration(*secs)*time.Second))) {
			w.log("pod %s evicted from unreachable node %s", p.Name, n.name)
			w.deletePod(p)
		}
	}
}

// unreachableToleration reports whether a pod tolerates the unreachable NoExecute taint and
// for how long (nil: forever).
func unreachableToleration(p *corev1.Pod) (*int64, bool) {
	for _, t := range p.Spec.Tolerations {
		if tolerates(t, corev1.TaintNodeUnreachable) {
			return t.TolerationSeconds, true
		}
	}
	return nil, false
}

// tolerates reports whether t tolerates the NoExecute taint key (which has no value).
func tolerates(t corev1.Toleration, key string) bool {
	return (t.Key == key || (t.Key == "" && t.Operator == corev1.TolerationOpExists)) &&
		(t.Effect == "" || t.Effect == corev1.TaintEffectNoExecute) &&
		(t.Operator == corev1.TolerationOpExists || t.Value == "")
}

// podGC fails and force-deletes the pods of a deleted node once the quarantine ran out.
func (w *world) podGC(pods []corev1.Pod) {
	k, now := w.k, w.clock.Now()
	for i := range pods {
		p := &pods[i]
		n := k.node(p.Spec.NodeName)
		if n == nil || !n.deleted || now.Sub(n.deletedAt) < k.timings.podGCQuarantine || ptr.Deref(p.DeletionGracePeriodSeconds, 1) == 0 {
			continue
		}
		w.log("pod %s of deleted node %s garbage-collected", p.Name, n.name)
		if !terminal(p) {
			cur := p.DeepCopy()
			cur.Status.Phase = corev1.PodFailed
			setReady(cur, corev1.ConditionFalse, "DeletionByPodGC")
			w.must(client.IgnoreNotFound(w.cl.Status().Update(bg, cur)))
		}
		w.must(client.IgnoreNotFound(w.cl.Delete(bg, p, client.GracePeriodSeconds(0))))
	}
}

// collectGarbage deletes, in the background, the ReplicaSets whose Deployment is gone and the
// pods whose ReplicaSet or Job is gone, from the objects as they were at the tick's start: a
// ReplicaSet deleted now leaves its pods to the next tick.
func (w *world) collectGarbage(rss []appsv1.ReplicaSet, pods []corev1.Pod, hasDep bool, dep *appsv1.Deployment, hasJob bool, job *batchv1.Job) {
	rsAlive := map[types.UID]bool{}
	for i := range rss {
		rs := &rss[i]
		rsAlive[rs.UID] = true
		if o := metav1.GetControllerOf(rs); o != nil && !(hasDep && dep.UID == o.UID) {
			w.log("ReplicaSet %s garbage-collected", rs.Name)
			w.must(client.IgnoreNotFound(w.cl.Delete(bg, rs)))
		}
	}
	for i := range pods {
		p := &pods[i]
		o := metav1.GetControllerOf(p)
		if o == nil {
			continue
		}
		orphan := (o.Kind == "ReplicaSet" && !rsAlive[o.UID]) || (o.Kind == "Job" && !(hasJob && job.UID == o.UID))
		if orphan && o.Kind == "Job" {
			w.removeFinalizer(p, batchv1.JobTrackingFinalizer) // the Job controller lets go of a gone Job's pods
		}
		if orphan && p.DeletionTimestamp == nil {
			w.log("pod %s garbage-collected", p.Name)
			w.deletePod(p)
		}
	}
}

// templateGeneration records, on a ReplicaSet, the Deployment generation whose template it
// was last found to match, to spare a comparison of the templates on every tick.
const templateGeneration = "simulation/template-generation"

// deploymentController keeps one ReplicaSet of the Deployment's template at its replicas,
// with the Recreate strategy: on a new template the old ReplicaSets are scaled to 0 and the
// new one is made once none of their pods runs (Terminating pods count).
func (w *world) deploymentController(dep *appsv1.Deployment, rss []appsv1.ReplicaSet) {
	replicas := ptr.Deref(dep.Spec.Replicas, 1)
	gen := strconv.FormatInt(dep.Generation, 10)
	var cur *appsv1.ReplicaSet
	var old []*appsv1.ReplicaSet
	for i := range rss {
		rs := &rss[i]
		if !metav1.IsControlledBy(rs, dep) {
			continue
		}
		if cur == nil && rs.Annotations[templateGeneration] == gen {
			cur = rs
			continue
		}
		tmpl := rs.Spec.Template.DeepCopy()
		delete(tmpl.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
		if cur == nil && equality.Semantic.DeepEqual(*tmpl, dep.Spec.Template) {
			cur = rs
			rs.Annotations[templateGeneration] = gen
			w.must(client.IgnoreNotFound(w.cl.Update(bg, rs)))
			continue
		}
		old = append(old, rs)
	}
	for _, rs := range old {
		if ptr.Deref(rs.Spec.Replicas, 1) != 0 {
			rs.Spec.Replicas = ptr.To[int32](0)
			w.must(client.IgnoreNotFound(w.cl.Update(bg, rs)))
		}
	}
	if cur != nil {
		if ptr.Deref(cur.Spec.Replicas, 1) != replicas {
			cur.Spec.Replicas = ptr.To(replicas)
			w.must(client.IgnoreNotFound(w.cl.Update(bg, cur)))
		}
		return
	}
	for _, p := range w.jmPods() {
		if o := metav1.GetControllerOf(&p); o != nil && slices.ContainsFunc(old, func(rs *appsv1.ReplicaSet) bool { return rs.UID == o.UID }) && !terminal(&p) {
			return // Recreate: the old pods first
		}
	}
	w.k.rsSeq++
	hash := fmt.Sprintf("%d", w.k.rsSeq)
	gvk, err := w.cl.GroupVersionKindFor(dep)
	w.must(err)
	tmpl := dep.Spec.Template.DeepCopy()
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	tmpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: dep.Name + "-" + hash, Namespace: ns, Labels: tmpl.Labels,
			Annotations:     map[string]string{templateGeneration: gen},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(dep, gvk)},
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas), Selector: dep.Spec.Selector, Template: *tmpl},
	}
	w.must(w.cl.Create(bg, rs))
}

// replicaSetController keeps each ReplicaSet's active pods (neither deleted nor terminal) at
// its replicas, from the ReplicaSets listed at the tick's start.
func (w *world) replicaSetController(rss []appsv1.ReplicaSet) {
	for i := range rss {
		rs := &rss[i]
		if rs.DeletionTimestamp != nil {
			continue
		}
		if cur := (&appsv1.ReplicaSet{}); w.cl.Get(bg, client.ObjectKeyFromObject(rs), cur) == nil {
			rs = cur // the Deployment controller may have scaled it this tick
		}
		var active []corev1.Pod
		for _, p := range w.jmPods() {
			if metav1.IsControlledBy(&p, rs) && p.DeletionTimestamp == nil && !terminal(&p) {
				active = append(active, p)
			}
		}
		want := int(ptr.Deref(rs.Spec.Replicas, 1))
		for n := len(active); n < want; n++ {
			w.createPod(rs, rs.Spec.Template, nil)
		}
		for n := len(active); n > want; n-- {
			w.deletePod(&active[n-1]) // the newest (names sort by creation here)
		}
	}
}

// jobController runs the JobManager Job (parallelism 1, backoffLimit 0): one pod, tracked
// with the batch.kubernetes.io/job-tracking finalizer, which it removes once it counted the
// pod (failed when terminal Failed or deleted before it succeeded); a failure beyond the
// backoff limit adds JobFailureTarget and deletes the pods still active, a success
// SuccessCriteriaMet; JobFailed or JobComplete follow once no pod of the Job is left
// non-terminal.
func (w *world) jobController(j *batchv1.Job) {
	cur := j.DeepCopy()
	has := func(t batchv1.JobConditionType) bool {
		return slices.ContainsFunc(cur.Status.Conditions, func(c batchv1.JobCondition) bool { return c.Type == t && c.Status == corev1.ConditionTrue })
	}
	add := func(t batchv1.JobConditionType, reason string) {
		now := metav1.NewTime(w.clock.Now())
		cur.Status.Conditions = append(cur.Status.Conditions, batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason,
			LastProbeTime: now, LastTransitionTime: now})
	}
	finishing := has(batchv1.JobFailureTarget) || has(batchv1.JobSuccessCriteriaMet)
	if j.DeletionTimestamp == nil && !finishing && !w.jobPodMade[j.UID] {
		w.jobPodMade[j.UID] = true
		w.createPod(j, j.Spec.Template, []string{batchv1.JobTrackingFinalizer})
	}
	var mine []corev1.Pod
	for _, p := range w.jmPods() {
		if metav1.IsControlledBy(&p, j) {
			mine = append(mine, p)
		}
	}
	for i := range mine {
		p := &mine[i]
		if !controllerutil.ContainsFinalizer(p, batchv1.JobTrackingFinalizer) {
			continue
		}
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			cur.Status.Succeeded++
		case p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil:
			cur.Status.Failed++
		default:
			continue
		}
		w.removeFinalizer(p, batchv1.JobTrackingFinalizer)
	}
	if len(mine) == 0 && w.jobPodMade[j.UID] && cur.Status.Failed+cur.Status.Succeeded == 0 {
		cur.Status.Failed++ // gone uncounted
	}
	switch {
	case finishing:
	case cur.Status.Failed > ptr.Deref(j.Spec.BackoffLimit, 6):
		add(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded)
		for i := range mine {
			if mine[i].DeletionTimestamp == nil && !terminal(&mine[i]) {
				w.deletePod(&mine[i])
			}
		}
	case cur.Status.Succeeded >= ptr.Deref(j.Spec.Completions, 1):
		add(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached)
	}
	left := slices.ContainsFunc(w.jmPods(), func(p corev1.Pod) bool { return metav1.IsControlledBy(&p, j) && !terminal(&p) })
	switch {
	case left:
	case has(batchv1.JobFailureTarget) && !has(batchv1.JobFailed):
		add(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded)
	case has(batchv1.JobSuccessCriteriaMet) && !has(batchv1.JobComplete):
		add(batchv1.JobComplete, batchv1.JobReasonCompletionsReached)
	}
	if !equality.Semantic.DeepEqual(cur.Status, j.Status) {
		w.must(client.IgnoreNotFound(w.cl.Status().Update(bg, cur)))
	}
}

// removeFinalizer removes a finalizer from the pod as stored now.
func (w *world) removeFinalizer(p *corev1.Pod, finalizer string) {
	cur := &corev1.Pod{}
	if w.cl.Get(bg, client.ObjectKeyFromObject(p), cur) != nil || !controllerutil.RemoveFinalizer(cur, finalizer) {
		return
	}
	w.must(client.IgnoreNotFound(w.cl.Update(bg, cur)))
}

// createPod creates a pod of owner's template, as its controller and the API server would:
// defaults (terminationGracePeriodSeconds 30 s, the DefaultTolerationSeconds tolerations),
// Pending, and bound at once by the scheduler when a node is free.
func (w *world) createPod(owner client.Object, tmpl corev1.PodTemplateSpec, finalizers []string) {
	w.podSeq++
	w.ipSeq++
	gvk, err := w.cl.GroupVersionKindFor(owner)
	w.must(err)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%d", owner.GetName(), w.podSeq), Namespace: ns,
			Labels: tmpl.Labels, Finalizers: finalizers,
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(owner, gvk)},
			CreationTimestamp: metav1.NewTime(w.clock.Now()),
			UID:               types.UID(fmt.Sprintf("pod-%d", w.podSeq)),
		},
		Spec:   *tmpl.Spec.DeepCopy(),
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if p.Spec.TerminationGracePeriodSeconds == nil {
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](corev1.DefaultTerminationGracePeriodSeconds)
	}
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		if !slices.ContainsFunc(p.Spec.Tolerations, func(t corev1.Toleration) bool { return tolerates(t, key) }) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(defaultTolerationSeconds)})
		}
	}
	p.Spec.NodeName = w.pickNode()
	w.must(w.cl.Create(bg, p))
	w.ips[p.Name] = fmt.Sprintf("10.0.%d.%d", w.ipSeq/250, w.ipSeq%250+1)
}

// pickNode is the scheduler's choice: of the nodes neither deleted nor tainted, the one with
// the fewest non-terminal JobManager pods (the first of those); "" when none is left.
func (w *world) pickNode() string {
	best, bestCount := "", 0
	for _, n := range w.kubeModel().nodes {
		if n.deleted || n.tainted {
			continue
		}
		count := 0
		for _, p := range w.jmPods() {
			if p.Spec.NodeName == n.name && !terminal(&p) {
				count++
			}
		}
		if best == "" || count < bestCount {
			best, bestCount = n.name, count
		}
	}
	return best
}

// schedule binds the pods left Pending without a node, once a node is free.
func (w *world) schedule() {
	for _, p := range w.jmPods() {
		if p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
			continue
		}
		if n := w.pickNode(); n != "" {
			cur := p.DeepCopy()
			cur.Spec.NodeName = n
			w.must(client.IgnoreNotFound(w.cl.Update(bg, cur)))
		}
	}
}

// deletePod deletes a pod gracefully, as kubectl delete or a controller does.
func (w *world) deletePod(p *corev1.Pod) {
	if err := w.cl.Delete(bg, p); err != nil && !apierrors.IsNotFound(err) {
		w.must(err)
	}
}

// forceDeletePod deletes a pod with grace 0: the object goes at once (finalizers aside), and
// its container runs on until its kubelet, if it is in touch, notices.
func (w *world) forceDeletePod(p *corev1.Pod) {
	w.must(client.IgnoreNotFound(w.cl.Delete(bg, p, client.GracePeriodSeconds(0))))
}

// stopNode stops the heartbeats of a node (it lost power or its network): nothing updates
// its pods, and their processes run on, cut off from the API server and from the other
// JobManagers.
func (w *world) stopNode(n *node) {
	if n == nil || n.down || n.deleted {
		return
	}
	w.log("node %s lost (heartbeats stop)", n.name)
	n.down, n.downAt = true, w.clock.Now()
	for pod, pr := range w.procs {
		if w.k.run(pod).node == n.name {
			pr.nodeLost = true
			if pr.alive() {
				pr.jm.Partition(true)
			}
		}
	}
}

// startNode brings a stopped node back: its heartbeats resume, its kubelet goes on with its
// pods at once (ending those deleted meanwhile), and the node lifecycle controller lifts the
// taints at its next look.
func (w *world) startNode(n *node) {
	if n == nil || !n.down || n.deleted {
		return
	}
	w.log("node %s back", n.name)
	n.down, n.upAt = false, w.clock.Now()
	for pod, pr := range w.procs {
		if w.k.run(pod).node == n.name {
			pr.nodeLost = false
			if pr.alive() {
				pr.jm.Partition(false)
			}
		}
	}
}

// deleteNode deletes a node with its machine: its processes end, its pods stay in the API,
// Running, until pod garbage collection.
func (w *world) deleteNode(n *node) {
	if n == nil || n.deleted {
		return
	}
	w.log("node %s deleted", n.name)
	n.deleted, n.deletedAt = true, w.clock.Now()
	for pod, pr := range w.procs {
		if w.k.run(pod).node == n.name && pr.alive() {
			pr.exited, pr.exitCode, pr.exitMessage = true, 137, "node deleted"
			pr.jm.Kill()
		}
	}
}

// nodeOf is the node a pod is bound to, nil for none.
func (w *world) nodeOf(pod string) *node {
	for _, p := range w.jmPods() {
		if p.Name == pod {
			return w.kubeModel().node(p.Spec.NodeName)
		}
	}
	if r := w.kubeModel().runs[pod]; r != nil {
		return w.k.node(r.node)
	}
	return nil
}

// kubelets runs the kubelet of every node in touch: its pods, and the containers of pods
// removed from the API under it (a force delete), which it stops once it noticed.
func (w *world) kubelets() {
	k, now := w.k, w.clock.Now()
	listed := map[string]bool{}
	for _, p := range w.jmPods() {
		listed[p.Name] = true
		n := k.node(p.Spec.NodeName)
		if n == nil || n.down || n.deleted {
			continue
		}
		k.run(p.Name).node = n.name
		w.kubelet(&p)
	}
	for pod, pr := range w.procs {
		r := k.runs[pod]
		if listed[pod] || !pr.alive() || pr.nodeLost || r == nil {
			continue
		}
		if r.goneAt.IsZero() {
			r.goneAt = now
		}
		if now.Sub(r.goneAt) >= k.timings.kubeletNotice {
			w.stop(pod, true, 143, "pod removed from the API")
		}
	}
}

// preStopSeconds is the sleep of the JobManager container's preStop hook.
func preStopSeconds(p *corev1.Pod) int64 {
	l := p.Spec.Containers[0].Lifecycle
	if l == nil || l.PreStop == nil || l.PreStop.Exec == nil || len(l.PreStop.Exec.Command) != 2 {
		return 0
	}
	s, _ := strconv.ParseInt(l.PreStop.Exec.Command[1], 10, 64)
	return s
}

func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func isReady(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
}

func setReady(p *corev1.Pod, status corev1.ConditionStatus, reason string) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			p.Status.Conditions[i].Status, p.Status.Conditions[i].Reason = status, reason
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: status, Reason: reason})
}

// kubelet syncs one pod of a node in touch. A live pod's JobManager container starts; after
// it exits it restarts (restartPolicy Always: at once the first time, then after the
// crash-loop back-off, Ready=False and CrashLoopBackOff in between) or stays terminated
// (Never: the pod terminal). A deleted pod's container gets SIGTERM after its preStop hook
// (within the grace period) and SIGKILL at its end; then the pod is terminal, and at the
// next sync the kubelet deletes it with grace 0.
func (w *world) kubelet(p *corev1.Pod) {
	k, now := w.k, w.clock.Now()
	run := k.run(p.Name)
	pr := w.procs[p.Name]
	never := p.Spec.RestartPolicy == corev1.RestartPolicyNever
	if pr != nil {
		pr.exitedOnItsOwn(now)
	}
	if p.DeletionTimestamp != nil {
		if run.terminal || terminal(p) {
			w.must(client.IgnoreNotFound(w.cl.Delete(bg, p, client.GracePeriodSeconds(0))))
			return
		}
		if pr != nil && pr.alive() {
			grace := time.Duration(ptr.Deref(p.DeletionGracePeriodSeconds, 0)) * time.Second
			start := p.DeletionTimestamp.Add(-grace)
			switch {
			case !now.Before(p.DeletionTimestamp.Time):
				w.stop(p.Name, false, 137, "grace period ran out")
			case !now.Before(start.Add(time.Duration(preStopSeconds(p)) * time.Second)):
				w.stop(p.Name, true, 143, "pod deleted")
			}
		}
		if pr != nil && pr.alive() {
			return // preStop, then the grace period
		}
		run.terminal = true
		cur := p.DeepCopy()
		cur.Status.Phase = corev1.PodFailed
		if pr != nil && pr.exitCode == 0 && pr.exited {
			cur.Status.Phase = corev1.PodSucceeded
		}
		cs := corev1.ContainerStatus{Name: resources.JobManagerContainer}
		if pr != nil {
			cs.RestartCount = int32(pr.restarts)
			cs.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: int32(pr.exitCode), Message: pr.exitMessage,
				StartedAt: metav1.NewTime(pr.startedAt), FinishedAt: metav1.NewTime(now)}
		}
		cur.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
		setReady(cur, corev1.ConditionFalse, "PodCompleted")
		w.must(client.IgnoreNotFound(w.cl.Status().Update(bg, cur)))
		return
	}
	if terminal(p) {
		return
	}
	switch {
	case pr == nil:
		pr = &proc{pod: p.Name, ip: w.ips[p.Name], jobManagerMode: never}
		w.procs[p.Name] = pr
		w.startContainer(pr, p)
		run.lastRestart = now
	case !pr.alive() && !never:
		if !run.down {
			// The exit just seen. The back-off starts again after the container ran for
			// twice the maximum back-off without a restart.
			if now.Sub(run.lastRestart) >= 2*k.timings.maxBackOff {
				run.backOff = 0
			}
			run.down, run.exitedAt, run.restartAt = true, now, now.Add(run.backOff)
			run.backOff = nextBackOff(run.backOff, k.timings)
		}
		if !now.Before(run.restartAt) {
			pr.restarts++
			run.lastRestart = now
			if pr.crashing > 0 {
				// The new run crashes at once: the back-off doubles.
				pr.crashing--
				run.exitedAt, run.restartAt = now, now.Add(run.backOff)
				run.backOff = nextBackOff(run.backOff, k.timings)
			} else {
				run.down = false
				w.startContainer(pr, p)
			}
		}
	}
	pr.exitedOnItsOwn(now) // main() may have thrown in the run just started
	cur := p.DeepCopy()
	cur.Status.PodIP = w.ips[p.Name]
	cs := corev1.ContainerStatus{Name: resources.JobManagerContainer, RestartCount: int32(pr.restarts)}
	ready := corev1.ConditionFalse
	switch {
	case pr.alive():
		cur.Status.Phase = corev1.PodRunning
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(pr.startedAt)}
		ready = corev1.ConditionTrue
	case never:
		cur.Status.Phase = corev1.PodFailed
		if pr.exitCode == 0 {
			cur.Status.Phase = corev1.PodSucceeded
		}
		cs.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: int32(pr.exitCode), Message: pr.exitMessage,
			StartedAt: metav1.NewTime(pr.startedAt), FinishedAt: metav1.NewTime(pr.exitedAt)}
	default:
		cur.Status.Phase = corev1.PodRunning
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
		cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: int32(pr.exitCode), Message: pr.exitMessage,
			StartedAt: metav1.NewTime(pr.startedAt), FinishedAt: metav1.NewTime(run.exitedAt)}
	}
	if cur.Status.StartTime == nil {
		t := metav1.NewTime(now)
		cur.Status.StartTime = &t
	}
	cur.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	cur.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}
	if !equality.Semantic.DeepEqual(cur.Status, p.Status) {
		w.must(client.IgnoreNotFound(w.cl.Status().Update(bg, cur)))
	}
}

// nextBackOff is the crash-loop back-off after d: the first restart at once, then backOff
// doubling up to maxBackOff.
func nextBackOff(d time.Duration, t kubeTimings) time.Duration {
	if d == 0 {
		return t.backOff
	}
	return min(2*d, t.maxBackOff)
}

// argValue returns the value after flag in a container's args.
func argValue(args []string, flag string) string {
	for i := range args {
		if args[i] == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func hasArg(args []string, arg string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, arg) })
}
