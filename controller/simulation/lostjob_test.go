package simulation_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// A job that the Lost timeout ends leaves no JobManager running for ever. The JobManager
// outlives its job (execution.shutdown-on-application-finish false), so once its job is Lost
// for good nothing but the controller ends it. Here main() never reaches execute() (Flink
// 2.2: no application API, the JobManager lists no job): past the HA recovery grace the job is
// Lost, past the Lost timeout afterJobFails applies. In Job mode the controller then ends the
// JobManager as it does a terminal job's (DELETE /cluster: the Job ends Complete, its pod and
// log are kept) and the cleanup policy applies to the rest; the job stays Lost, never
// Succeeded. With the job's checkpoints still in Flink's HA store (a last-state redeploy's
// main() that hangs) the Job is deleted instead, which keeps them. In Deployment mode the
// JobManager is scaled to 0.
func TestLostTimeoutEndsTheJobManagerOfAJobThatNoLongerRuns(t *testing.T) {
	cases := []struct {
		name          string
		mode          v1beta1.JobManagerDeploymentType
		afterJobFails v1beta1.CleanupAction
		// haCheckpoints puts the job's checkpoint ConfigMap in Flink's HA store.
		haCheckpoints bool
		// apiDown: the REST API stops answering before the Lost timeout ends.
		apiDown bool
		// shutdown: the JobManager was shut down (DELETE /cluster) and its Job is Complete;
		// else, in Job mode, the Job was deleted.
		shutdown bool
		// taskManagers, jobManager: whether they are left (a JobManager Deployment at 0).
		taskManagers, jobManager bool
	}{
		{name: "Job, KeepCluster: the JobManager shut down, its Job Complete and kept, the TaskManagers kept",
			mode: v1beta1.JobManagerDeploymentTypeJob, afterJobFails: v1beta1.CleanupActionKeepCluster, shutdown: true, taskManagers: true, jobManager: true},
		{name: "Job, DeleteTaskManager: the JobManager shut down, the TaskManagers deleted",
			mode: v1beta1.JobManagerDeploymentTypeJob, afterJobFails: v1beta1.CleanupActionDeleteTaskManager, shutdown: true, jobManager: true},
		{name: "Job, DeleteCluster: everything deleted",
			mode: v1beta1.JobManagerDeploymentTypeJob, afterJobFails: v1beta1.CleanupActionDeleteCluster, shutdown: true},
		{name: "Job, KeepCluster, the job's checkpoints in HA: the Job deleted, not shut down, the HA data kept",
			mode: v1beta1.JobManagerDeploymentTypeJob, afterJobFails: v1beta1.CleanupActionKeepCluster, haCheckpoints: true, taskManagers: true},
		{name: "Job, KeepCluster, the REST API down: the Job deleted past the wait bound from the timeout's end",
			mode: v1beta1.JobManagerDeploymentTypeJob, afterJobFails: v1beta1.CleanupActionKeepCluster, apiDown: true, taskManagers: true},
		{name: "Deployment, KeepCluster: the JobManager scaled to 0, the TaskManagers kept",
			mode: v1beta1.JobManagerDeploymentTypeDeployment, afterJobFails: v1beta1.CleanupActionKeepCluster, taskManagers: true, jobManager: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldWith(t, 71, &setup{mode: tc.mode, build: func(fc *v1beta1.FlinkCluster) {
				fc.Spec.Job.CleanupPolicy = &v1beta1.CleanupPolicy{AfterJobSucceeds: v1beta1.CleanupActionDeleteCluster,
					AfterJobFails: tc.afterJobFails, AfterJobCancelled: v1beta1.CleanupActionDeleteCluster}
			}})
			w.fl.SetProgram(fakeflink.Program{BlockBeforeExecute: true})
			w.until(t, "the JobManager leads", 30, func(*v1beta1.FlinkCluster) bool { return w.leader() != nil })
			pr := w.leader()
			require.Empty(t, pr.jm.JobIDs(), "main() has not submitted the job")
			id := w.cluster().Status.Components.Job.ID
			haCM := flinkha.JobConfigMapName(resources.HAClusterID(w.cluster()), id)
			if tc.haCheckpoints {
				require.NoError(t, w.cl.Create(bg, flinkha.NewConfigMap(ns, haCM, resources.HAClusterID(w.cluster()))))
			}

			w.advance(3*time.Minute, 10*time.Second) // past the HA recovery grace (2 min)
			fc := w.cluster()
			require.Equal(t, v1beta1.JobStateLost, fc.Status.Components.Job.State, w.dump())
			if tc.apiDown {
				w.apiDown = 1 // from now on the REST API times out
			}
			w.advance(11*time.Minute, 10*time.Second) // past the Lost timeout (10 min)
			fc = w.until(t, "the Lost timeout applied", 10, conditionIs(controller.ConditionLost, controller.ConditionReasonLostTimeout))
			if tc.apiDown {
				w.advance(waitBound-3*time.Minute, 20*time.Second)
				require.True(t, pr.alive(), "within the wait bound from the timeout's end the JobManager is kept\n%s", w.dump())
				require.True(t, conditionIs(controller.ConditionWaiting, controller.ConditionReasonWaitingForJobManagerShutdown)(w.cluster()), w.dump())
				w.advance(3*time.Minute, 20*time.Second)
			}

			fc = w.until(t, "the JobManager ended", 30, func(*v1beta1.FlinkCluster) bool {
				if tc.mode == v1beta1.JobManagerDeploymentTypeDeployment {
					wl := w.workload()
					return wl != nil && wl.replicas == 0 && len(w.jmPods()) == 0
				}
				return !pr.alive()
			})
			w.settle(5)
			fc = w.cluster()
			assert.Equal(t, v1beta1.JobStateLost, fc.Status.Components.Job.State, "the job's end stays unknown")
			assert.Nil(t, fc.Status.Components.Job.CompletionTime)
			assert.False(t, meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionWaiting), "nothing left to wait for\n%s", w.dump())
			if !tc.apiDown {
				assert.Zero(t, eventsWith(w, controller.ReasonWaitExceeded))
			}
			for _, note := range w.rec.notes {
				assert.NotContains(t, note, "-> "+v1beta1.JobStateSucceeded, "never recorded as a success")
			}

			if tc.mode == v1beta1.JobManagerDeploymentTypeJob {
				j := w.jmJob()
				if tc.shutdown {
					assert.Equal(t, 1, w.shutdownRequests(), "asked to shut down once")
					st, ok := pr.jm.ExitStatus()
					require.True(t, ok)
					assert.Equal(t, fakeflink.ExitSucceeded, st.Code)
					if tc.jobManager {
						require.NotNil(t, j, "the ended Job is kept")
						assert.True(t, jobConditionTrue(j, batchv1.JobComplete), "the Job Complete, not read as the job's success")
					}
				} else {
					assert.Zero(t, w.shutdownRequests(), "no shutdown reached the JobManager")
					assert.Equal(t, 1, eventsWith(w, controller.ReasonJobManagerDeleted))
					assert.Equal(t, map[bool]int{true: 1}[tc.apiDown], eventsWith(w, controller.ReasonJobManagerShutdownUnanswered))
				}
				if !tc.jobManager {
					assert.Nil(t, j)
				}
			} else {
				wl := w.workload()
				require.NotNil(t, wl)
				assert.Zero(t, wl.replicas)
			}
			assert.Equal(t, tc.taskManagers, w.taskManagersExist(), "the TaskManagers per afterJobFails (%s)", tc.afterJobFails)
			if tc.haCheckpoints {
				assert.NoError(t, w.cl.Get(bg, types.NamespacedName{Namespace: ns, Name: haCM}, &corev1.ConfigMap{}), "the job's checkpoints kept in HA")
			}
			noViolations(t, w)
		})
	}
}

// taskManagersExist reports whether the TaskManager workload exists.
func (w *world) taskManagersExist() bool {
	key := types.NamespacedName{Namespace: ns, Name: resources.TaskManagerName(name)}
	for _, obj := range []client.Object{&appsv1.StatefulSet{}, &appsv1.Deployment{}} {
		if err := w.cl.Get(bg, key, obj); err == nil {
			return true
		} else if !apierrors.IsNotFound(err) {
			w.t.Fatal(err)
		}
	}
	return false
}
