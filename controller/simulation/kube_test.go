package simulation_test

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/flink-admission/flink-admission/controller/resources"
)

// kubeletFinalizer keeps a deleted pod listed (Terminating) until the model's kubelet
// confirms its containers stopped — never, on a lost node.
const kubeletFinalizer = "simulation/kubelet"

var bg = context.Background()

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

// kube runs the Kubernetes controllers and kubelets of the model once: Deployment and Job
// controllers create pods, the garbage collector deletes orphans, kubelets start and stop
// containers (never on a lost node).
func (w *world) kube() {
	jmName := resources.JobManagerName(name)
	dep := &appsv1.Deployment{}
	hasDep := w.cl.Get(bg, types.NamespacedName{Namespace: ns, Name: jmName}, dep) == nil
	job := &batchv1.Job{}
	hasJob := w.cl.Get(bg, types.NamespacedName{Namespace: ns, Name: jmName}, job) == nil
	pods := w.jmPods()

	owners := map[types.UID]bool{}
	if hasDep {
		owners[dep.UID] = true
	}
	if hasJob {
		owners[job.UID] = true
	}
	// Garbage collector and scale-down.
	for i := range pods {
		p := &pods[i]
		owner := metav1.GetControllerOf(p)
		orphan := owner == nil || !owners[owner.UID]
		scaledDown := hasDep && owner != nil && owner.UID == dep.UID && dep.Spec.Replicas != nil && *dep.Spec.Replicas == 0
		if (orphan || scaledDown) && p.DeletionTimestamp == nil {
			w.deletePod(p)
		}
	}
	// Kubelets: a deleted pod's containers stop, and the pod goes, unless its node is lost.
	for _, p := range w.jmPods() {
		if p.DeletionTimestamp == nil {
			continue
		}
		if pr := w.procs[p.Name]; pr != nil && pr.nodeLost {
			continue
		}
		w.stop(p.Name, true, 143, "pod deleted")
		w.removePod(&p)
	}
	// Deployment controller (Recreate): one pod of the template while replicas is 1.
	if hasDep && dep.DeletionTimestamp == nil && (dep.Spec.Replicas == nil || *dep.Spec.Replicas == 1) {
		live := 0
		for _, p := range w.jmPods() {
			if o := metav1.GetControllerOf(&p); o != nil && o.UID == dep.UID && p.DeletionTimestamp == nil {
				live++
			}
		}
		if live == 0 {
			w.createPod(dep, dep.Spec.Template)
		}
	}
	// Job controller: one pod, no retries; the Job ends with its pod.
	if hasJob && job.DeletionTimestamp == nil && !w.jobPodMade[job.UID] {
		w.jobPodMade[job.UID] = true
		w.createPod(job, job.Spec.Template)
	}
	if hasJob {
		w.jobConditions(job)
	}
	// Kubelets: containers of live pods (re)start.
	for _, p := range w.jmPods() {
		w.kubelet(&p)
	}
}

func (w *world) createPod(owner client.Object, tmpl corev1.PodTemplateSpec) {
	w.podSeq++
	w.ipSeq++
	gvk, err := w.cl.GroupVersionKindFor(owner)
	w.must(err)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%d", owner.GetName(), w.podSeq), Namespace: ns,
			Labels: tmpl.Labels, Finalizers: []string{kubeletFinalizer},
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(owner, gvk)},
			CreationTimestamp: metav1.NewTime(w.clock.Now()),
			UID:               types.UID(fmt.Sprintf("pod-%d", w.podSeq)),
		},
		Spec: tmpl.Spec,
	}
	w.must(w.cl.Create(bg, p))
	w.ips[p.Name] = fmt.Sprintf("10.0.%d.%d", w.ipSeq/250, w.ipSeq%250+1)
}

func (w *world) deletePod(p *corev1.Pod) {
	if err := w.cl.Delete(bg, p); err != nil && !apierrors.IsNotFound(err) {
		w.must(err)
	}
}

func (w *world) removePod(p *corev1.Pod) {
	cur := &corev1.Pod{}
	if err := w.cl.Get(bg, client.ObjectKeyFromObject(p), cur); err != nil {
		return
	}
	controllerutil.RemoveFinalizer(cur, kubeletFinalizer)
	w.must(client.IgnoreNotFound(w.cl.Update(bg, cur)))
}

// kubelet starts the JobManager container of a live pod, restarts it after a crash
// (restartPolicy Always) or leaves it terminated (Never), and writes the pod status.
func (w *world) kubelet(p *corev1.Pod) {
	if p.DeletionTimestamp != nil {
		return
	}
	pr := w.procs[p.Name]
	if pr != nil && pr.nodeLost {
		return // no status updates from a lost node
	}
	never := p.Spec.RestartPolicy == corev1.RestartPolicyNever
	if pr != nil {
		pr.exitedOnItsOwn()
	}
	switch {
	case pr == nil:
		pr = &proc{pod: p.Name, ip: w.ips[p.Name], jobManagerMode: never}
		w.procs[p.Name] = pr
		w.startContainer(pr, p)
	case !pr.alive() && !never && pr.crashing == 0:
		pr.restarts++
		w.startContainer(pr, p)
	case !pr.alive() && !never:
		pr.crashing--
		pr.restarts++
	}
	pr.exitedOnItsOwn() // main() may have thrown in the run just started
	now := metav1.NewTime(w.clock.Now())
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
			StartedAt: metav1.NewTime(pr.startedAt), FinishedAt: now}
	}
	if cur.Status.StartTime == nil {
		cur.Status.StartTime = &now
	}
	cur.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	cur.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}
	w.must(client.IgnoreNotFound(w.cl.Status().Update(bg, cur)))
}

// jobConditions ends the JobManager Job with its pod: Complete after exit 0, Failed after a
// failure or the pod's loss.
func (w *world) jobConditions(j *batchv1.Job) {
	if slices.ContainsFunc(j.Status.Conditions, func(c batchv1.JobCondition) bool { return c.Status == corev1.ConditionTrue }) {
		return
	}
	var pod *corev1.Pod
	for _, p := range w.jmPods() {
		if o := metav1.GetControllerOf(&p); o != nil && o.UID == j.UID {
			pod = &p
		}
	}
	var cond batchv1.JobConditionType
	switch {
	case pod == nil && w.jobPodMade[j.UID]:
		cond = batchv1.JobFailed // the pod was lost
	case pod == nil:
		return
	case pod.Status.Phase == corev1.PodSucceeded:
		cond = batchv1.JobComplete
	case pod.Status.Phase == corev1.PodFailed:
		cond = batchv1.JobFailed
	default:
		return
	}
	cur := j.DeepCopy()
	cur.Status.Conditions = append(cur.Status.Conditions, batchv1.JobCondition{Type: cond, Status: corev1.ConditionTrue, Reason: "Model"})
	w.must(client.IgnoreNotFound(w.cl.Status().Update(bg, cur)))
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
