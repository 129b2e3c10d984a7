package bench

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/devenv"
)

// floorNamespace holds the control plane floor's workloads, apart from the clusters.
const floorNamespace = "bench-floor"

// floorObjects are the objects the controller creates for clusters copies of sample (named
// as the create phase names them), in the order it creates them: the Flink ConfigMap, the
// JobManager Service, the TaskManager StatefulSet and the JobManager Deployment. They are
// built with the controller's own builders, without owner: no FlinkCluster and no controller
// stand behind them. The control plane's StatefulSet controller runs the TaskManager pods, in
// the floor as in the create phase; the floor waits for the JobManager pods.
func floorObjects(sample *v1beta1.FlinkCluster, clusters int) ([][]client.Object, error) {
	out := make([][]client.Object, 0, clusters)
	for i := range clusters {
		fc := sample.DeepCopy()
		fc.Name, fc.Namespace = clusterName(i), floorNamespace
		rev, err := resources.Revision(fc)
		if err != nil {
			return nil, err
		}
		d := resources.Deploy{Revision: rev, JobID: fmt.Sprintf("%032x", i+1)}
		cm, err := resources.ConfigMap(fc, d)
		if err != nil {
			return nil, err
		}
		objs := []client.Object{cm, resources.Service(fc, rev), resources.TaskManagerStatefulSet(fc, rev), resources.JobManagerDeployment(fc, d, 1)}
		for _, obj := range objs {
			obj.SetOwnerReferences(nil)
		}
		out = append(out, objs)
	}
	return out, nil
}

// clusterName names the i-th cluster of the section.
func clusterName(i int) string { return fmt.Sprintf("c%04d", i) }

// floor is the control plane's floor: the time until every pod of the floor's objects ran,
// how many did, and what the machine and the control plane spent meanwhile.
type floor struct {
	seconds      float64
	ready        int
	cpuSeconds   float64
	allocSeconds float64
	plane        PlaneUsage
	requests     RequestAttribution
}

// measureFloor creates the objects of clusters clusters (floorObjects) at once, in their own
// namespace and with the create phase's parallelism, and measures the time until every pod is
// Running (and Ready, where KWOK marks it), the machine's CPU time and the control plane's
// usage meanwhile (its API server read through apiserver, its requests attributed from
// audit); then deletes them and waits until
// every pod is gone, so that the phases start on an empty plane. It counts pods from r
// (RunController's watch).
func measureFloor(ctx context.Context, cl client.Client, r client.Reader, apiserver rest.Interface, audit auditLog, sample *v1beta1.FlinkCluster, clusters int, wait time.Duration) (fl floor, err error) {
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: floorNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: devenv.DevServiceAccount, Namespace: floorNamespace}},
	} {
		if err := cl.Create(ctx, obj); err != nil {
			return fl, err
		}
	}
	objs, err := floorObjects(sample, clusters)
	if err != nil {
		return fl, err
	}
	at, err := takeSnapshot(ctx, apiserver, audit)
	if err != nil {
		return fl, err
	}
	start := time.Now()
	if err := parallel(len(objs), createWorkers, func(i int) error {
		for _, obj := range objs[i] {
			if err := cl.Create(ctx, obj); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return fl, fmt.Errorf("creating the floor's objects: %w", err)
	}
	fl.ready, _, err = waitPods(ctx, r, floorNamespace, wait, func(list []corev1.Pod) (int, bool) {
		n := runningPods(list)
		return n, n == clusters
	})
	fl.seconds = time.Since(start).Seconds()
	if err != nil {
		return fl, err
	}
	now, err := takeSnapshot(ctx, apiserver, audit)
	if err != nil {
		return fl, err
	}
	requests, err := audit.between(at.audit, now.audit)
	if err != nil {
		return fl, fmt.Errorf("reading the API server's audit log: %w", err)
	}
	fl.requests = requests.attribute(clusters, minRequestsPerCluster)
	fl.cpuSeconds = now.cpu.machine - at.cpu.machine
	fl.allocSeconds = now.plane.alloc.seconds - at.plane.alloc.seconds
	fl.plane = now.plane.usageSince(at.plane, clusters)
	// The floor's own objects only: the namespace's kube-root-ca.crt stays.
	for _, obj := range []client.Object{&appsv1.Deployment{}, &appsv1.StatefulSet{}, &corev1.Service{}, &corev1.ConfigMap{}} {
		// A delete-collection of a thousand objects can outlast the API server's request
		// timeout on a loaded machine; it goes on meanwhile, and asking again finishes it.
		for attempt := 1; ; attempt++ {
			err := cl.DeleteAllOf(ctx, obj, client.InNamespace(floorNamespace), client.HasLabels{resources.LabelCluster}, client.PropagationPolicy(metav1.DeletePropagationBackground))
			if err == nil {
				break
			}
			if attempt == 5 || !apierrors.IsTimeout(err) && !apierrors.IsServerTimeout(err) {
				return fl, err
			}
		}
	}
	left, gone, err := waitPods(ctx, r, floorNamespace, wait, func(list []corev1.Pod) (int, bool) { return len(list), len(list) == 0 })
	if err == nil && !gone {
		err = fmt.Errorf("%d of the floor's pods still there %s after their workloads were deleted", left, wait)
	}
	return fl, err
}

// runningPods counts the JobManager pods of list that run (podRunning): the floor is done
// when every cluster's JobManager runs, as a create phase is when every job does. The
// TaskManager pods the StatefulSet controller makes are left out.
func runningPods(list []corev1.Pod) int {
	n := 0
	for i := range list {
		if list[i].Labels[resources.LabelComponent] == resources.ComponentJobManager && podRunning(&list[i]) {
			n++
		}
	}
	return n
}

// podRunning reports whether a pod runs: phase Running, not being deleted, and Ready when
// it carries a Ready condition.
func podRunning(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return true
}

// waitPods lists the pods of namespace every 250 ms until done says so or wait runs out,
// and returns the count done gave last and whether it said done.
func waitPods(ctx context.Context, r client.Reader, namespace string, wait time.Duration, done func([]corev1.Pod) (int, bool)) (n int, ok bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		var pods corev1.PodList
		if err := r.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
			if ctx.Err() != nil {
				return n, false, nil
			}
			return n, false, err
		}
		if n, ok = done(pods.Items); ok {
			return n, true, nil
		}
		select {
		case <-ctx.Done():
			return n, false, nil
		case <-tick.C:
		}
	}
}
