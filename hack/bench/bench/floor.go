package bench

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8swait "k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
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
// the floor as in the create phase; the floor waits for the JobManager pods. withCluster
// puts first, for the Flink floor, the FlinkCluster they are built from (owning nothing).
func floorObjects(sample *v1beta1.FlinkCluster, clusters int, namespace string, withCluster bool) ([][]client.Object, error) {
	out := make([][]client.Object, 0, clusters)
	for i := range clusters {
		fc := sample.DeepCopy()
		fc.Name, fc.Namespace = clusterName(i), namespace
		rev, err := resources.Revision(fc)
		if err != nil {
			return nil, err
		}
		d := resources.Deploy{Revision: rev, JobID: floorJobID(i)}
		cm, err := resources.ConfigMap(fc, d)
		if err != nil {
			return nil, err
		}
		objs := []client.Object{cm, resources.Service(fc, rev), resources.TaskManagerStatefulSet(fc, rev), resources.JobManagerDeployment(fc, d, 1)}
		for _, obj := range objs {
			obj.SetOwnerReferences(nil)
		}
		if withCluster {
			objs = append([]client.Object{fc}, objs...)
		}
		out = append(out, objs)
	}
	return out, nil
}

// floorJobID is the job ID of the floor's i-th cluster.
func floorJobID(i int) string { return fmt.Sprintf("%032x", i+1) }

// clusterName names the i-th cluster of the section.
func clusterName(i int) string { return fmt.Sprintf("c%04d", i) }

// floor is the control plane's floor: the time until every pod of the floor's objects ran
// (with Flink, every job), how many did, and what the machine and the control plane spent
// meanwhile.
type floor struct {
	seconds      float64
	ready        int
	cpuSeconds   float64
	allocSeconds float64
	plane        PlaneUsage
	requests     RequestAttribution
}

// FlinkFloor is the create phase without the controller: the same FlinkClusters created,
// their objects created directly (floorObjects) and the simulated Flink running their
// JobManagers, until every job runs. What the create phase spends beyond it is what the
// controller costs: its requests, its watches, and its time to act and to observe.
type FlinkFloor struct {
	// Seconds is the time until every job ran, Done how many did.
	Seconds float64 `json:"seconds"`
	Done    int     `json:"done"`
	// MachineCPUSeconds and ClusterIPAllocationSeconds are as ControllerPhase's.
	MachineCPUSeconds          float64 `json:"machineCPUSeconds"`
	ClusterIPAllocationSeconds float64 `json:"clusterIPAllocationSeconds"`
	// Plane is what the control plane spent, Requests whose its API requests were.
	Plane    PlaneUsage         `json:"plane"`
	Requests RequestAttribution `json:"requests"`
}

// flinkFloorNamespace holds the Flink floor's clusters.
const flinkFloorNamespace = "bench-floor-flink"

// measureFloor creates the objects of clusters clusters (floorObjects) at once, in their own
// namespace and with the create phase's parallelism, and measures the time until every
// JobManager pod is Running (and Ready, where KWOK marks it), the machine's CPU time and the
// control plane's usage meanwhile (its API server read through apiserver, its requests
// attributed from audit); then deletes them and waits until every pod is gone, so that the
// phases start on an empty plane. It counts pods from r (RunController's watch).
//
// With sim, it measures the Flink floor (FlinkFloor) instead: each cluster's FlinkCluster is
// created before its objects, and it waits until sim's leader of every cluster runs its job;
// the FlinkClusters and Flink's HA ConfigMaps are deleted with the objects, and a
// simulated JobManager still alive then is killed, so that none loads the phases.
func measureFloor(ctx context.Context, cl client.Client, r client.Reader, apiserver rest.Interface, audit auditLog, sample *v1beta1.FlinkCluster, clusters int, wait time.Duration, sim *devenv.Simulation) (fl floor, err error) {
	namespace := floorNamespace
	if sim != nil {
		namespace = flinkFloorNamespace
	}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: devenv.DevServiceAccount, Namespace: namespace}},
	} {
		if err := cl.Create(ctx, obj); err != nil {
			return fl, err
		}
	}
	objs, err := floorObjects(sample, clusters, namespace, sim != nil)
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
	if sim == nil {
		fl.ready, _, err = waitPods(ctx, r, namespace, wait, func(list []corev1.Pod) (int, bool) {
			n := runningPods(list)
			return n, n == clusters
		})
	} else {
		fl.ready, err = waitFlinkJobs(ctx, sim, clustersOf(objs), wait)
	}
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
	return fl, removeFloor(ctx, cl, r, namespace, wait, sim, clustersOf(objs))
}

// clustersOf are the FlinkClusters of the Flink floor's objects (floorObjects withCluster),
// as created: with their UIDs, by which the simulated Flink knows them.
func clustersOf(objs [][]client.Object) []*v1beta1.FlinkCluster {
	var out []*v1beta1.FlinkCluster
	for _, o := range objs {
		if fc, ok := o[0].(*v1beta1.FlinkCluster); ok {
			out = append(out, fc)
		}
	}
	return out
}

// removeFloor deletes the floor's objects of namespace (the namespace's kube-root-ca.crt
// stays) and waits until every pod is gone; with sim, also the FlinkClusters fcs and
// Flink's HA ConfigMaps, and it kills what is left of their simulated JobManagers.
func removeFloor(ctx context.Context, cl client.Client, r client.Reader, namespace string, wait time.Duration, sim *devenv.Simulation, fcs []*v1beta1.FlinkCluster) error {
	type deletion struct {
		obj  client.Object
		what client.HasLabels
	}
	deletes := []deletion{
		{&appsv1.Deployment{}, client.HasLabels{resources.LabelCluster}},
		{&appsv1.StatefulSet{}, client.HasLabels{resources.LabelCluster}},
		{&corev1.Service{}, client.HasLabels{resources.LabelCluster}},
		{&corev1.ConfigMap{}, client.HasLabels{resources.LabelCluster}},
	}
	if sim != nil {
		deletes = append(deletes, deletion{&corev1.ConfigMap{}, client.HasLabels{flinkha.LabelApp, flinkha.LabelType}}, deletion{&v1beta1.FlinkCluster{}, nil})
	}
	for _, d := range deletes {
		// A delete-collection of a thousand objects can outlast the API server's request
		// timeout on a loaded machine; it goes on meanwhile, and asking again finishes it.
		for attempt := 1; ; attempt++ {
			err := cl.DeleteAllOf(ctx, d.obj, client.InNamespace(namespace), d.what, client.PropagationPolicy(metav1.DeletePropagationBackground))
			if err == nil {
				break
			}
			if attempt == 5 || !apierrors.IsTimeout(err) && !apierrors.IsServerTimeout(err) {
				return err
			}
		}
	}
	left, gone, err := waitPods(ctx, r, namespace, wait, func(list []corev1.Pod) (int, bool) { return len(list), len(list) == 0 })
	if err == nil && !gone {
		err = fmt.Errorf("%d of the floor's pods still there %s after their workloads were deleted", left, wait)
	}
	for _, fc := range fcs {
		for _, p := range sim.Cluster(fc).Processes() {
			if p.Alive() {
				p.Kill()
			}
		}
	}
	return err
}

// waitFlinkJobs waits until sim's leader of each of fcs runs the cluster's job, or wait
// runs out, and returns how many did.
func waitFlinkJobs(ctx context.Context, sim *devenv.Simulation, fcs []*v1beta1.FlinkCluster, wait time.Duration) (int, error) {
	running := make([]bool, len(fcs))
	n := 0
	err := k8swait.PollUntilContextTimeout(ctx, 250*time.Millisecond, wait, true, func(context.Context) (bool, error) {
		for i, fc := range fcs {
			if running[i] {
				continue
			}
			if leader := sim.Cluster(fc).Leader(); leader != nil && leader.JobState(floorJobID(i)) == flinkclient.JobStateRunning {
				running[i] = true
				n++
			}
		}
		return n == len(fcs), nil
	})
	if err != nil && ctx.Err() == nil {
		// Out of time: the count says how many ran.
		return n, nil
	}
	return n, err
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
