package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// ensure keeps an active job's objects in place: the components of the current deploy and
// the JobManager workload, created when the deploy has none yet, or again when a JobManager
// Deployment went missing and the job can resume from HA.
func ensure(ctx context.Context, a flowActs, in flowIn, st *v1beta1.FlinkClusterStatus) (out flowOut, err error) {
	job := st.Components.Job
	if in.obs.wl == nil {
		if job.State != v1beta1.JobStatePending {
			// A Job that disappeared is Lost, not resubmitted (package state); its timeout
			// applies.
			if err := out.act(a.applyComponents(ctx)); err != nil {
				return out, err
			}
			out.lookAgain()
			return out, nil
		}
		if w, err := a.waitForNoLeader(ctx); err != nil || w != nil {
			if w != nil {
				out.wait(w)
			}
			return out, err
		}
		if job.DeployTime == "" {
			// A deploy not created yet: the first one, or one whose creation failed.
			from := job.FromSavepoint
			if job.ID == "" && in.fc.Spec.Job.FromSavepoint != nil {
				from = *in.fc.Spec.Job.FromSavepoint
			}
			if job.ID == "" {
				err = a.newDeploy(ctx, &out, from)
				return out, err
			}
			if err := recordedFirst(in.read, st); err != nil {
				return out, err
			}
			err = out.act(a.createJobManager(ctx, &out))
			return out, err
		}
		err = resume(ctx, a, in, st, &out)
		return out, err
	}
	if err := out.act(a.applyComponents(ctx)); err != nil {
		return out, err
	}
	if in.obs.wl.Deleting {
		out.waitFor(ConditionReasonWaitingForJobManagerDeletion, "the JobManager workload is being deleted")
		return out, nil
	}
	if in.fc.Spec.GetDeploymentType() == v1beta1.JobManagerDeploymentTypeDeployment {
		if err := a.scaleJobManager(ctx, 1); err != nil {
			return out, err
		}
	}
	out.idle = true
	return out, nil
}

// resume creates the missing JobManager Deployment of the current deploy again, under the
// same job ID. A deploy whose job ran (or was submitted: ranOrSubmitted) resumes only from HA: the JobManager recovers the job
// graph and the latest checkpoint, and the deploy's savepoint is not passed again (it is
// older than the job's state). When the HA metadata is gone, restoring any savepoint would
// rewind the job silently: the deployment fails with a clear reason and the user chooses.
func resume(ctx context.Context, a flowActs, in flowIn, st *v1beta1.FlinkClusterStatus, out *flowOut) error {
	job := st.Components.Job
	if !ranOrSubmitted(job, in.obs) {
		return out.act(a.createJobManager(ctx, out))
	}
	// HA services other than Kubernetes HA (unsupportedHA) keep the job graph where the
	// controller cannot look: the JobManager is created again and recovers the job if its
	// graph is there; if not, main() finds ResumeFromHAOnly and fails instead of starting
	// from empty state (state.Flink.RestoreRefused).
	if flinkcluster.KubernetesHA(in.fc.Spec.FlinkProperties) && !in.obs.ha.jobGraphStored(job.ID) {
		reason := fmt.Sprintf("the JobManager Deployment of job %s is missing and the HA metadata the job would recover from is gone (no job graph in the ConfigMaps of cluster ID %s): restoring savepoint %q would lose the state acknowledged since",
			job.ID, resources.HAClusterID(in.fc), job.SavepointLocation)
		if err := a.setJobState(state.EventDeploymentAndHAMissing, reason, reason, in.now); err != nil {
			return fmt.Errorf("recording the missing JobManager Deployment: %w", err)
		}
		setCondition(&st.Conditions, condition(ConditionDeploymentFailed, metav1.ConditionTrue, ConditionReasonHAMetadataMissing, reason), in.now)
		a.event(corev1.EventTypeWarning, ReasonHAMetadataMissing, "Deploy", "%s", reason)
		out.requireSavepoint(ConditionReasonHAMetadataMissing, "%s", reason)
		return nil
	}
	job.FromSavepoint = ""
	if err := recordedFirst(in.read, st); err != nil {
		return err
	}
	return out.act(a.createJobManager(ctx, out))
}
