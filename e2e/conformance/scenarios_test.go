//go:build conformance

package conformance_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/resources"
)

// scenario is a row of the pull request's table.
type scenario struct {
	id, name string
	// na is why the scenario does not apply to a deployment type and Flink version, "" when
	// it does.
	na  func(mode v1beta1.JobManagerDeploymentType, version string) string
	run func(c *cell)
}

func always(v1beta1.JobManagerDeploymentType, string) string { return "" }

// deploymentOnly is the na of a scenario that applies to a JobManager Deployment only.
func deploymentOnly(reason string) func(v1beta1.JobManagerDeploymentType, string) string {
	return func(m v1beta1.JobManagerDeploymentType, _ string) string {
		if m == v1beta1.JobManagerDeploymentTypeJob {
			return reason
		}
		return ""
	}
}

var table1 = []scenario{
	{id: "1", name: "Regular update", na: always, run: regularUpdate},
	{id: "7", name: "Delete JobManager pod", na: always, run: deleteJobManagerPod},
	{id: "8", name: "Delete JobManager Deployment", run: deleteJobManagerDeployment, na: deploymentOnly("a Job-mode JobManager has no Deployment")},
}

// cellSlots bounds the cells that run at once: each runs two JVMs, which start on two cores
// (CONFORMANCE_PARALLEL, 3 by default).
var cellSlots = make(chan struct{}, parallelCells())

func parallelCells() int {
	if n, err := strconv.Atoi(os.Getenv("CONFORMANCE_PARALLEL")); err == nil && n > 0 {
		return n
	}
	return 3
}

// TestScenarios runs the chosen cells of the table (see the package documentation).
func TestScenarios(t *testing.T) {
	for _, s := range table1 {
		if !scenarios[s.id] {
			continue
		}
		for _, mode := range modes {
			for _, v := range versions {
				r := row{Scenario: s.id, Name: s.name, FlinkVersion: v, DeploymentType: string(mode)}
				if reason := s.na(mode, v); reason != "" {
					r.Result, r.Detail = NA, reason
					table.add(r)
					continue
				}
				t.Run(fmt.Sprintf("%s/%s/%s", s.id, mode, v), func(t *testing.T) {
					t.Parallel()
					cellSlots <- struct{}{}
					defer func() { <-cellSlots }()
					c := newCell(t, s.id, v, mode)
					began := time.Now()
					t.Cleanup(func() {
						r.Result, r.Seconds = Pass, int(time.Since(began).Seconds())
						if t.Failed() {
							r.Result, r.Detail = Fail, c.detail
							if r.Detail == "" {
								r.Detail = "failed; see the test's log"
							}
						}
						table.add(r)
					})
					s.run(c)
				})
			}
		}
	}
}

// running creates the counting job and waits until it runs and completed a checkpoint; it
// returns the cluster then and the job's ID.
func (c *cell) running() (*v1beta1.FlinkCluster, string) {
	c.t.Helper()
	c.create(c.counting().Obj())
	fc := c.waitJob(v1beta1.JobStateRunning)
	id := jobOf(fc).ID
	c.waitCheckpoint(id, 0)
	return fc, id
}

// regularUpdate is scenario 1: a change of a non-scaling flinkProperties value stops the job
// with a savepoint and the next deploy restores exactly that savepoint; for a Deployment, no
// old JobManager pod is left once the replacement exists; twice.
func regularUpdate(c *cell) {
	_, id := c.running()
	var overlap atomic.Value
	if c.mode == v1beta1.JobManagerDeploymentTypeDeployment {
		stop := c.watchJobManagerOverlap(&overlap)
		defer stop()
	}
	for round := 1; round <= 2; round++ {
		starts := len(c.report().starts)
		fc := c.get()
		fc.Spec.FlinkProperties["conformance.update"] = fmt.Sprint(round)
		if err := k8s.Update(context.Background(), fc); err != nil {
			c.fatalf("update %d: %v", round, err)
		}
		c.eventually(fmt.Sprintf("update %d: a new deploy running", round), waitLong, func() bool {
			j := jobOf(c.get())
			return j.State == v1beta1.JobStateRunning && j.ID != id
		})
		next := jobOf(c.get())
		if next.SavepointLocation == "" {
			c.fatalf("update %d: no savepoint recorded", round)
		}
		c.restoredExactly(starts, c.report().newestSnapshotBefore(starts))
		if v := overlap.Load(); v != nil {
			c.fatalf("update %d: %s", round, v)
		}
		id = next.ID
	}
}

// newestSnapshotBefore is the newest checkpoint ID snapshotted before the n-th start was
// reported: after a stop with savepoint, the savepoint.
func (r report) newestSnapshotBefore(n int) int64 {
	var newest int64
	for _, s := range r.snapshots {
		if n >= len(r.starts) || s.line < r.starts[n].line {
			newest = max(newest, s.CheckpointID)
		}
	}
	return newest
}

// watchJobManagerOverlap records in overlap when JobManager pods of two revisions exist at
// once (an old one still terminating beside the new one), until stop is called.
func (c *cell) watchJobManagerOverlap(overlap *atomic.Value) (stop func()) {
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
			}
			pods := &corev1.PodList{}
			if err := k8s.List(context.Background(), pods, client.InNamespace(c.ns), client.MatchingLabels{resources.LabelComponent: resources.ComponentJobManager}); err != nil {
				continue
			}
			revs := map[string]bool{}
			for _, p := range pods.Items {
				revs[p.Labels["pod-template-hash"]] = true
			}
			if len(revs) > 1 && overlap.Load() == nil {
				overlap.Store(fmt.Sprintf("JobManager pods of %d revisions existed at once", len(revs)))
			}
		}
	}()
	return func() { close(done) }
}

// deleteJobManagerPod is scenario 7: the JobManager pod is deleted with a grace period shorter
// than its preStop delay, so its process is killed. A Deployment's replacement pod recovers the same job from
// HA at its newest checkpoint; a Job-mode JobManager is not replaced (restartPolicy Never) and
// the job fails without being resubmitted.
func deleteJobManagerPod(c *cell) {
	_, id := c.running()
	pods := c.jmPods()
	if len(pods) != 1 {
		c.fatalf("%d JobManager pods, want 1", len(pods))
	}
	old := pods[0]
	cp := c.waitCheckpoint(id, 0)
	starts := len(c.report().starts)
	// A grace period of one second, shorter than the preStop delay: the JobManager is killed
	// without its shutdown, as the pull request's force delete does. (A force delete, grace
	// 0, makes KWOK 0.8 hand the pod's IP to the next pod of its node while the TaskManager
	// still holds it: see the package documentation.)
	grace := int64(1)
	if err := k8s.Delete(context.Background(), &old, &client.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		c.fatalf("deleting the JobManager pod: %v", err)
	}
	if c.mode == v1beta1.JobManagerDeploymentTypeJob {
		fc := c.waitJob(v1beta1.JobStateFailed)
		if got := jobOf(fc).ID; got != id {
			c.fatalf("job ID %s, want %s", got, id)
		}
		time.Sleep(20 * time.Second) // observe: no resubmission
		if j := jobOf(c.get()); j.ID != id || j.State != v1beta1.JobStateFailed {
			c.fatalf("after the failure: job %s %s, want %s Failed (no resubmission)", j.ID, j.State, id)
		}
		return
	}
	c.eventually("a new JobManager pod", waitLong, func() bool {
		for _, p := range c.jmPods() {
			if p.UID != old.UID && p.Status.Phase == corev1.PodRunning {
				return true
			}
		}
		return false
	})
	c.recovered(id, starts, cp)
}

// recovered checks that the job id runs again, recovered by Flink's HA after the first
// starts reported starts: every subtask restored one checkpoint, no older than cp (completed
// before the JobManager went), with exactly what it snapshotted there.
func (c *cell) recovered(id string, starts int, cp int64) {
	c.t.Helper()
	c.eventually("the job running again", waitLong, func() bool {
		return len(c.report().starts) >= starts+2 && jobOf(c.get()).State == v1beta1.JobStateRunning
	})
	if got := jobOf(c.get()).ID; got != id {
		c.fatalf("job ID %s after recovery, want %s", got, id)
	}
	restored := c.report().starts[starts].RestoredCheckpointID
	if restored < cp {
		c.fatalf("recovered checkpoint %d, older than %d, completed before the JobManager went", restored, cp)
	}
	c.restoredExactly(starts, restored)
}

// deleteJobManagerDeployment is scenario 8: the controller recreates a deleted JobManager
// Deployment, and the job recovers from HA with its ID and checkpointed state.
func deleteJobManagerDeployment(c *cell) {
	_, id := c.running()
	cp := c.waitCheckpoint(id, 0)
	starts := len(c.report().starts)
	d := &appsv1.Deployment{}
	key := types.NamespacedName{Namespace: c.ns, Name: resources.JobManagerName("job")}
	if err := k8s.Get(context.Background(), key, d); err != nil {
		c.fatalf("reading the JobManager Deployment: %v", err)
	}
	if err := k8s.Delete(context.Background(), d, client.PropagationPolicy("Background")); err != nil {
		c.fatalf("deleting the JobManager Deployment: %v", err)
	}
	c.eventually("the Deployment recreated", waitLong, func() bool {
		next := &appsv1.Deployment{}
		err := k8s.Get(context.Background(), key, next)
		return err == nil && next.UID != d.UID
	})
	c.recovered(id, starts, cp)
}
