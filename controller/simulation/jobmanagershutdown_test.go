package simulation_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// Flink's DELETE /cluster ends the cluster SUCCEEDED, exit 0, whatever the job's state: a
// JobManager Job that completes because someone else shut the cluster down, before the job's
// end is on record, says that the job ended, not that it succeeded. The job is Lost, ended
// unobserved, and nothing is cleaned up; only the controller's own shutdown, once the end is
// on record, ends the Job as the end of a job (TestJobModeJobManagerEndedByTheControllerOnceTheEndIsRecorded).
func TestJobModeJobManagerShutDownByAnotherIsNoSuccess(t *testing.T) {
	cases := []struct {
		name string
		// flinkState is the job's state in Flink when the shutdown comes, "" to leave it running.
		flinkState string
	}{
		{name: "the job running"},
		{name: "the job FAILED, the failure not yet seen", flinkState: flinkclient.JobStateFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldWith(t, 64, &setup{mode: v1beta1.JobManagerDeploymentTypeJob})
			fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
			id := fc.Status.Components.Job.ID
			pr := w.leader()
			require.NotNil(t, pr)
			if tc.flinkState != "" {
				pr.jm.SetJobState(id, tc.flinkState)
			}
			cl, err := flinkclient.New(pr.jm.URL(), pr.jm.HTTPClient())
			require.NoError(t, err)
			require.NoError(t, cl.ShutdownCluster(bg), "someone else's DELETE /cluster")
			st, ok := pr.jm.ExitStatus()
			require.True(t, ok)
			require.Equal(t, fakeflink.ExitSucceeded, st.Code, "Flink's shutDownCluster() exits 0")

			w.until(t, "the Job Complete", 10, func(*v1beta1.FlinkCluster) bool {
				j := w.jmJob()
				return j != nil && jobConditionTrue(j, batchv1.JobComplete)
			})
			w.settle(3)
			fc = w.cluster()
			job := fc.Status.Components.Job
			assert.Equal(t, v1beta1.JobStateLost, job.State, "a completed Job without the job's end on record is no success")
			c := meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionLost)
			require.NotNil(t, c)
			assert.Equal(t, controller.ConditionReasonEndedUnobserved, c.Reason)
			assert.Contains(t, c.Message, "DELETE /cluster")
			assert.NotEqual(t, v1beta1.ClusterStateStopped, fc.Status.State, "no cleanup policy applies")
			assert.NotNil(t, w.jmJob(), "the Job and its pod's log are kept")
			assert.Zero(t, eventsWith(w, controller.ReasonJobManagerShutdown), "the controller asked no shutdown")
			noViolations(t, w)
		})
	}
}
