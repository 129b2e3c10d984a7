//go:build conformance

package conformance_test

import (
	"context"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/realflink"
)

// quiet is how long a cell watches for a resubmission that must not come (the pull request
// watched 2 minutes; the controller acts within seconds of what it reads, so 30 s sees it).
const quiet = 30 * time.Second

func init() {
	table1 = append(table1,
		scenario{id: "2", name: "Cancel with savepoint", na: always, run: cancelWithSavepoint},
		scenario{id: "3", name: "Non-stopping savepoint", na: always, run: nonStoppingSavepoint},
		scenario{id: "4", name: "Delete running FlinkCluster", na: always, run: deleteRunningCluster},
		scenario{id: "5a", name: "Exhaust Flink retries after checkpoint", na: always, run: func(c *cell) { exhaustRetries(c, true) }},
		scenario{id: "5b", name: "Exhaust Flink retries from startup", na: always, run: func(c *cell) { exhaustRetries(c, false) }},
		scenario{id: "9", name: "Exception in main()", na: always, run: func(c *cell) { failedSubmission(c, realflink.ThrowingMainJob) }},
		scenario{id: "11", name: "Invalid submission artifact", na: always, run: func(c *cell) { failedSubmission(c, "dev.flinkadmission.testjobs.NoSuchClass") }},
		scenario{id: "12", name: "Finite application succeeds", na: always, run: finiteSucceeds},
	)
}

// annotate sets the user-control annotation.
func (c *cell) annotate(control string) {
	c.t.Helper()
	fc := c.get()
	if fc.Annotations == nil {
		fc.Annotations = map[string]string{}
	}
	fc.Annotations[v1beta1.ControlAnnotation] = control
	if err := k8s.Update(context.Background(), fc); err != nil {
		c.fatalf("annotating %s: %v", control, err)
	}
}

// waitControl waits for the control's end and fails the cell unless it succeeded.
func (c *cell) waitControl(name string) *v1beta1.FlinkCluster {
	c.t.Helper()
	var fc *v1beta1.FlinkCluster
	c.eventually("control "+name+" to end", waitLong, func() bool {
		fc = c.get()
		ctl := fc.Status.Control
		return ctl != nil && ctl.Name == name && (ctl.State == v1beta1.ControlStateSucceeded || ctl.State == v1beta1.ControlStateFailed)
	})
	if ctl := fc.Status.Control; ctl.State != v1beta1.ControlStateSucceeded {
		c.fatalf("control %s %s: %s", name, ctl.State, ctl.Message)
	}
	return fc
}

// stays checks, for quiet, that the job keeps its ID and state: nothing resubmitted.
func (c *cell) stays(id, state string) {
	c.t.Helper()
	deadline := time.Now().Add(quiet)
	for time.Now().Before(deadline) {
		if j := jobOf(c.get()); j.ID != id || j.State != state {
			c.fatalf("job %s %s, want %s %s to stay (no resubmission)", j.ID, j.State, id, state)
		}
		time.Sleep(time.Second)
	}
}

// stopped waits for the cluster's cleanup: state Stopped.
func (c *cell) stopped() {
	c.t.Helper()
	c.eventually("the cluster Stopped", waitLong, func() bool { return c.get().Status.State == v1beta1.ClusterStateStopped })
}

// cancelWithSavepoint is scenario 2: job-cancel takes a final savepoint, the job ends
// Cancelled, the cancellation cleanup runs, nothing is resubmitted.
func cancelWithSavepoint(c *cell) {
	_, id := c.running()
	c.annotate(v1beta1.ControlNameJobCancel)
	fc := c.waitControl(v1beta1.ControlNameJobCancel)
	if jobOf(fc).SavepointLocation == "" {
		c.fatalf("no final savepoint recorded")
	}
	c.waitJob(v1beta1.JobStateCancelled)
	c.stopped()
	c.stays(id, v1beta1.JobStateCancelled)
}

// nonStoppingSavepoint is scenario 3: a savepoint leaves the job running on the same
// JobManager workload and pod, and processing goes on.
func nonStoppingSavepoint(c *cell) {
	_, id := c.running()
	pods := c.jmPods()
	starts := len(c.report().starts)
	c.annotate(v1beta1.ControlNameSavepoint)
	fc := c.waitControl(v1beta1.ControlNameSavepoint)
	if j := jobOf(fc); j.ID != id || j.State != v1beta1.JobStateRunning {
		c.fatalf("after the savepoint: job %s %s, want %s Running", j.ID, j.State, id)
	}
	c.waitCheckpoint(id, c.completedCheckpoint(id))
	if got := c.jmPods(); len(got) != 1 || len(pods) != 1 || got[0].UID != pods[0].UID {
		c.fatalf("the JobManager pod changed")
	}
	if n := len(c.report().starts); n != starts {
		c.fatalf("the job restarted (%d starts, want %d)", n, starts)
	}
}

// deleteRunningCluster is scenario 4: deleting a running cluster removes it and everything
// it owns, the HA ConfigMaps Flink made included, once its JobManager is gone.
func deleteRunningCluster(c *cell) {
	fc, _ := c.running()
	if err := k8s.Delete(context.Background(), fc); err != nil {
		c.fatalf("deleting the FlinkCluster: %v", err)
	}
	c.eventually("the FlinkCluster gone", waitLong, func() bool {
		err := k8s.Get(context.Background(), types.NamespacedName{Namespace: c.ns, Name: "job"}, &v1beta1.FlinkCluster{})
		return err != nil
	})
	c.eventually("the cluster's pods and ConfigMaps gone", waitLong, func() bool {
		pods := &corev1.PodList{}
		cms := &corev1.ConfigMapList{}
		_ = k8s.List(context.Background(), pods, client.InNamespace(c.ns), client.MatchingLabels{resources.LabelCluster: "job"})
		_ = k8s.List(context.Background(), cms, client.InNamespace(c.ns))
		left := 0
		for _, cm := range cms.Items {
			if cm.Name != "kube-root-ca.crt" {
				left++
			}
		}
		return len(pods.Items) == 0 && left == 0
	})
}

// exhaustRetries is scenarios 5a (the tasks fail after a checkpoint) and 5b (from the
// start): Flink's restart strategy runs out, the job ends Failed, the failure cleanup runs
// and nothing is resubmitted.
func exhaustRetries(c *cell, afterCheckpoint bool) {
	if !afterCheckpoint {
		c.setFail("FAIL")
	}
	c.create(c.counting().CleanupPolicy(v1beta1.CleanupActionDeleteCluster, v1beta1.CleanupActionDeleteCluster, v1beta1.CleanupActionDeleteCluster).Obj())
	if afterCheckpoint {
		fc := c.waitJob(v1beta1.JobStateRunning)
		c.waitCheckpoint(jobOf(fc).ID, 0)
		c.setFail("FAIL")
	}
	fc := c.waitJob(v1beta1.JobStateFailed)
	if len(jobOf(fc).FailureReasons) == 0 {
		c.fatalf("no failure reason recorded")
	}
	c.stopped()
	c.stays(jobOf(fc).ID, v1beta1.JobStateFailed)
}

func (c *cell) setFail(v string) {
	c.t.Helper()
	if err := os.WriteFile(c.failFile(), []byte(v+"\n"), 0o644); err != nil {
		c.fatalf("writing the fail file: %v", err)
	}
}

// failedSubmission is scenarios 9 (main() throws) and 11 (an entry class that does not
// exist): a useful failure reason, the failure cleanup, no endless Deploying, no resubmission.
func failedSubmission(c *cell, class string) {
	c.create(c.cluster(class).CleanupPolicy(v1beta1.CleanupActionDeleteCluster, v1beta1.CleanupActionDeleteCluster, v1beta1.CleanupActionDeleteCluster).Obj())
	var fc *v1beta1.FlinkCluster
	c.eventually("the submission failed", waitLong, func() bool {
		fc = c.get()
		s := jobOf(fc).State
		return s == v1beta1.JobStateDeployFailed || s == v1beta1.JobStateFailed
	})
	if len(jobOf(fc).FailureReasons) == 0 {
		c.fatalf("job %s without a failure reason", jobOf(fc).State)
	}
	c.stopped()
	c.stays(jobOf(fc).ID, jobOf(fc).State)
}

// finiteSucceeds is scenario 12: a finite job ends Succeeded, the success cleanup
// (DeleteCluster) runs, nothing is resubmitted.
func finiteSucceeds(c *cell) {
	c.create(c.cluster(realflink.FiniteJob, "--records", "50").CleanupPolicy(v1beta1.CleanupActionDeleteCluster, v1beta1.CleanupActionDeleteCluster, v1beta1.CleanupActionDeleteCluster).Obj())
	fc := c.waitJob(v1beta1.JobStateSucceeded)
	c.stopped()
	c.stays(jobOf(fc).ID, v1beta1.JobStateSucceeded)
}
