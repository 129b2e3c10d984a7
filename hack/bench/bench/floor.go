package bench

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/devenv"
)

// floorNamespace holds the control plane floor's Deployments, apart from the clusters.
const floorNamespace = "bench-floor"

// floorDeployments are the JobManager Deployments the controller would create for clusters
// copies of sample (named as the create phase names them), built with the controller's own
// builder, without owner: no FlinkCluster and no controller stand behind them.
func floorDeployments(sample *v1beta1.FlinkCluster, clusters int) ([]*appsv1.Deployment, error) {
	out := make([]*appsv1.Deployment, 0, clusters)
	for i := range clusters {
		fc := sample.DeepCopy()
		fc.Name, fc.Namespace = clusterName(i), floorNamespace
		rev, err := resources.Revision(fc)
		if err != nil {
			return nil, err
		}
		d := resources.JobManagerDeployment(fc, resources.Deploy{Revision: rev, JobID: fmt.Sprintf("%032x", i+1)}, 1)
		d.OwnerReferences = nil
		out = append(out, d)
	}
	return out, nil
}

// clusterName names the i-th cluster of the section.
func clusterName(i int) string { return fmt.Sprintf("c%04d", i) }

// measureFloor creates the JobManager Deployments of clusters clusters at once, in their
// own namespace and with the create phase's parallelism, and returns the time until every
// pod is Running (and Ready, where KWOK marks it); then deletes them and waits until every
// pod is gone, so that the phases start on an empty plane.
func measureFloor(ctx context.Context, cl client.Client, sample *v1beta1.FlinkCluster, clusters int, wait time.Duration) (seconds float64, ready int, err error) {
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: floorNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: devenv.DevServiceAccount, Namespace: floorNamespace}},
	} {
		if err := cl.Create(ctx, obj); err != nil {
			return 0, 0, err
		}
	}
	deps, err := floorDeployments(sample, clusters)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	if err := parallel(len(deps), createWorkers, func(i int) error { return cl.Create(ctx, deps[i]) }); err != nil {
		return 0, 0, fmt.Errorf("creating the floor's Deployments: %w", err)
	}
	ready, _, err = waitPods(ctx, cl, wait, func(pods []corev1.Pod) (int, bool) {
		n := 0
		for i := range pods {
			if podRunning(&pods[i]) {
				n++
			}
		}
		return n, n == clusters
	})
	seconds = time.Since(start).Seconds()
	if err != nil {
		return seconds, ready, err
	}
	if err := cl.DeleteAllOf(ctx, &appsv1.Deployment{}, client.InNamespace(floorNamespace), client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		return seconds, ready, err
	}
	left, gone, err := waitPods(ctx, cl, wait, func(pods []corev1.Pod) (int, bool) { return len(pods), len(pods) == 0 })
	if err == nil && !gone {
		err = fmt.Errorf("%d of the floor's pods still there %s after their Deployments were deleted", left, wait)
	}
	return seconds, ready, err
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

// waitPods lists the floor's pods every 250 ms until done says so or wait runs out, and
// returns the count done gave last and whether it said done.
func waitPods(ctx context.Context, cl client.Client, wait time.Duration, done func([]corev1.Pod) (int, bool)) (n int, ok bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		var pods corev1.PodList
		if err := cl.List(ctx, &pods, client.InNamespace(floorNamespace)); err != nil {
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
