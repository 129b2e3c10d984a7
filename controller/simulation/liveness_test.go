package simulation_test

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// Liveness, beside the safety invariants: once the faults stop — Flink answers, savepoints
// complete, the job runs — every update ends within a bounded number of steps: the spec's
// revision is deployed, or the controller stopped for a reason the user must answer
// (SavepointRequired, a failed deployment), or the job ended. A stall, Updating for ever while
// the job runs, is a violation.

// quietRounds bounds the quiet phase: 120 rounds of 30 s (an hour of the controller's clock),
// past every bound of the controller's (--wait-bound 5m, --savepoint-timeout 15m, the Lost
// timeout 10m) with room for each to run out once more after another.
const quietRounds, quietStep = 120, 30 * time.Second

// heal ends every fault the generator injected, as the world's own actions would: a lost
// node is deleted (what an admin does, docs/troubleshooting.md: its pods are then garbage
// collected), the REST API answers, no JobManager crash-loops, savepoints complete, and the
// leader's job that Flink restarts runs again.
func (w *world) heal() {
	w.apiDown = 0
	w.savepointsStuck = false
	for _, n := range w.k.nodes {
		if n.down {
			w.deleteNode(n)
		}
	}
	for _, pr := range w.procs {
		if !pr.alive() {
			continue
		}
		pr.crashing = 0
		if pr.unavailable > 0 {
			pr.unavailable = 0
			pr.jm.SetUnavailable(false)
		}
	}
	if l := w.fl.Leader(); l != nil {
		for _, id := range l.JobIDs() {
			if l.JobState(id) == flinkclient.JobStateRestarting {
				l.SetJobState(id, flinkclient.JobStateRunning)
			}
		}
	}
}

// checkUpdatesEnd plays the quiet phase and checks that an update under way ended.
func (w *world) checkUpdatesEnd() {
	fc := w.cluster()
	if fc == nil || fc.DeletionTimestamp != nil || fc.Status.Components.Job == nil {
		return
	}
	w.log("quiet phase: no more faults")
	for range quietRounds {
		w.heal()
		w.clock.Step(quietStep)
		w.kube()
		w.flink()
		w.reconcileAtOnce()
		if fc = w.cluster(); fc == nil || fc.DeletionTimestamp != nil || updateEnded(fc) {
			return
		}
	}
	job := fc.Status.Components.Job
	w.violate("liveness: the update to revision %s did not end within %d quiet rounds of %s: job %s, Updating %s",
		fc.Status.Revision.NextRevision, quietRounds, quietStep, job.State, conditionText(fc, controller.ConditionUpdating))
}

// updateEnded reports whether no update is under way: the spec's revision is deployed (its
// job past Pending, or Lost: the Lost timeout's own bound applies), or the controller asks the
// user (SavepointRequired, DeploymentFailed), or the job ended.
func updateEnded(fc *v1beta1.FlinkCluster) bool {
	job := fc.Status.Components.Job
	rev := fc.Status.Revision
	switch {
	case meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionSavepointRequired),
		meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionDeploymentFailed),
		flinkcluster.Terminal(job.State):
		return true
	case job.State == v1beta1.JobStateUpdating || job.State == v1beta1.JobStatePending:
		return false
	}
	return rev.CurrentRevision == rev.NextRevision
}

// conditionText is a condition's reason and message, for a violation.
func conditionText(fc *v1beta1.FlinkCluster, typ string) string {
	c := meta.FindStatusCondition(fc.Status.Conditions, typ)
	if c == nil {
		return "none"
	}
	return string(c.Status) + "/" + c.Reason + ": " + c.Message
}
