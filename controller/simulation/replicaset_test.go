package simulation_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
)

// The ReplicaSet between a Deployment and its pods outlives a background delete of the
// Deployment until the garbage collector reaches it, and replaces any pod deleted
// meanwhile. TestInvariants found this on the model with ReplicaSets (267 of 1,000
// sequences, then 9 of 1,000 once the controller left a ReplicaSet's pods to the garbage
// collector): the ended job's Deployment deleted by the cleanup, its pod deleted in the
// window (by the controller, then by a user or an eviction), and the ReplicaSet's new
// JobManager ran main() again after the job had ended. The controller now scales the
// Deployment to 0 and deletes it once the ReplicaSet let go of its pods.
func TestEndedJobsReplicaSetReplacesNoPodWhileItOutlivesItsDeployment(t *testing.T) {
	for _, tc := range []struct {
		name string
		// deletePods deletes the live JobManager pods after every reconcile, at the worst
		// moment for a ReplicaSet that outlives its Deployment.
		deletePods bool
	}{
		{"the cleanup alone", false},
		{"with the pods deleted by someone else after every reconcile", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldWith(t, 21, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment})
			fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
			id := fc.Status.Components.Job.ID
			w.jobEvent(flinkclient.JobStateFailed)
			gone := false
			for i := 0; i < 60 && !gone; i++ {
				w.clock.Step(2 * time.Second)
				w.kube()
				w.flink()
				w.reconcileAtOnce()
				if tc.deletePods {
					for _, p := range w.jmPods() {
						if p.DeletionTimestamp == nil {
							w.deletePod(&p)
						}
					}
				}
				gone = len(w.jmPods()) == 0 && len(w.replicaSets()) == 0 &&
					w.cl.Get(bg, client.ObjectKeyFromObject(deploymentMeta()), &appsv1.Deployment{}) != nil
			}
			require.True(t, gone, "the cleanup removes the Deployment, its ReplicaSet and its pods\n%s", w.dump())
			assert.Equal(t, 1, w.truthOf(id).mains, "main() ran once")
			assert.Equal(t, v1beta1.JobStateFailed, w.cluster().Status.Components.Job.State)
			noViolations(t, w)
		})
	}
}
