package simulation_test

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/flinkcluster"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
	"github.com/flink-admission/flink-admission/policy"
)

// High availability: the HA data a deploy recovers from, deleted or missing, never lets a
// JobManager start the job again from empty state or an old savepoint; the leader is found
// however the REST address is set, and a wait for it is bounded.

// A JobManager Deployment that went missing with its HA data is not recreated from an old
// savepoint.
func TestDeploymentGoneWithItsHADataFailsInsteadOfRedeploying(t *testing.T) {
	w := newWorldWith(t, 4, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment})
	w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	w.deleteHA()
	w.haDeletedExternally = true
	w.deleteWorkload()
	fc := w.until(t, "failed", 20, jobIs(v1beta1.JobStateFailed))
	assert.True(t, meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionSavepointRequired))
	c := meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionDeploymentFailed)
	require.NotNil(t, c)
	assert.Equal(t, controller.ConditionReasonHAMetadataMissing, c.Reason)
	w.settle(5)
	assert.Nil(t, w.workload(), "nothing recreated")
	noViolations(t, w)
}

// The HA ConfigMaps deleted under the running leader. Flink's leader election driver treats
// its ConfigMap deleted externally as fatal: the JobManager exits, the kubelet restarts the
// container and main() runs again under the same job ID. The Flink configuration names
// ResumeFromHAOnly, a path that does not exist, so the job fails to start instead of starting
// from empty state; the controller says why and asks for a savepoint, and the user's
// restore-from deploys anew.
func TestHADeletedUnderTheLeaderFailsInsteadOfStartingEmpty(t *testing.T) {
	for _, v23 := range []bool{false, true} {
		t.Run(map[bool]string{false: "2.2", true: "2.3"}[v23], func(t *testing.T) {
			w := newWorldWith(t, 22, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment, v23: v23})
			fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
			id := fc.Status.Components.Job.ID
			leader := w.leader()
			require.NotNil(t, leader)
			w.haDeletedExternally = true
			w.deleteHA()
			require.False(t, leader.alive(), "the leader exits when its ConfigMap is deleted")

			fc = w.until(t, "Failed with SavepointRequired", 40, func(fc *v1beta1.FlinkCluster) bool {
				return fc.Status.Components.Job.State == v1beta1.JobStateFailed &&
					conditionIs(controller.ConditionSavepointRequired, controller.ConditionReasonHAMetadataMissing)(fc)
			})
			assert.Equal(t, 1, w.truthOf(id).mains, "main() never started the job again from empty state")
			assert.True(t, conditionIs(controller.ConditionDeploymentFailed, controller.ConditionReasonHAMetadataMissing)(fc))
			assert.Contains(t, meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionDeploymentFailed).Message, controller.ResumeFromHAOnly)
			assert.True(t, slicesContains(w.rec.notes, "Warning "+controller.ReasonHAMetadataMissing))

			const older = "file:///savepoints/older"
			w.annotate(controller.RestoreAnnotation, older)
			fc = w.until(t, "deployed anew from the chosen savepoint", 40, func(fc *v1beta1.FlinkCluster) bool {
				return fc.Status.Components.Job.ID != id && fc.Status.Components.Job.State == v1beta1.JobStateRunning
			})
			assert.Equal(t, older, fc.Status.Components.Job.FromSavepoint)
			noViolations(t, w)
		})
	}
}

// Before the controller saw the job run: the Flink REST API never answers, so the status
// records no run, while the JobManager's main() submitted the job (its graph is in HA) and the
// job ran past its first checkpoint. The HA ConfigMaps are then deleted under the leader,
// which exits; its restart runs main() again. The controller read the job graph in HA (it
// reads the ConfigMaps in every reconcile, whether or not Flink answers) and pinned the deploy
// to its HA data: the configuration names ResumeFromHAOnly, the rerun fails instead of
// restoring the deploy's savepoint again, and the controller asks for a savepoint: main() never
// runs the job again from that savepoint, which would rewind everything the first run did.
func TestHADeletedBeforeTheControllerSawTheJobRunFailsInsteadOfRewinding(t *testing.T) {
	const initial = "file:///savepoints/initial"
	w := newWorldWith(t, 25, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment, build: func(fc *v1beta1.FlinkCluster) {
		fc.Spec.Job.FromSavepoint = ptr.To(initial)
	}})
	w.apiDown = 1 << 20 // the Flink REST API never answers
	w.until(t, "the job submitted, its deploy pinned to HA", 30, func(*v1beta1.FlinkCluster) bool {
		cm := w.haConfigMap()
		return cm != nil && len(flinkha.JobGraphs(cm)) > 0 && w.configuredSavepoint() == controller.ResumeFromHAOnly
	})
	fc := w.cluster()
	id := fc.Status.Components.Job.ID
	require.Empty(t, fc.Status.Components.Job.StartTime, "the controller has not seen the job run")
	require.Equal(t, initial, w.executionsOf(id)[0].RestoredFrom)
	w.clock.Step(time.Minute) // the job runs on, unseen, past its first checkpoint
	w.haDeletedExternally = true
	w.deleteHA()
	w.apiDown = 0
	fc = w.until(t, "Failed with SavepointRequired", 40, func(fc *v1beta1.FlinkCluster) bool {
		return fc.Status.Components.Job.State == v1beta1.JobStateFailed &&
			conditionIs(controller.ConditionSavepointRequired, controller.ConditionReasonHAMetadataMissing)(fc)
	})
	assert.Equal(t, 1, w.truthOf(id).mains, "main() never ran the job again from the deploy's savepoint")
	assert.True(t, conditionIs(controller.ConditionDeploymentFailed, controller.ConditionReasonHAMetadataMissing)(fc))
	assert.True(t, slicesContains(w.rec.notes, "Warning "+controller.ReasonHAMetadataMissing))
	noViolations(t, w)
}

// A Deployment cluster with ZooKeeper HA, stored before the rule
// deployment-requires-kubernetes-ha (the model's API server runs no admission). The controller
// says it cannot check this HA (DeploymentFailed=True/UnsupportedHA) and never loops (a
// stop-with-savepoint and a redeploy under a new job ID, again and again): the job keeps its
// job ID and runs.
func TestDeploymentWithUnsupportedHANeverLoops(t *testing.T) {
	for _, haType := range []string{"zookeeper", "org.example.flink.MyHaServicesFactory"} {
		t.Run(haType, func(t *testing.T) {
			w := newWorldWith(t, 21, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment, build: func(fc *v1beta1.FlinkCluster) {
				fc.Spec.FlinkProperties["high-availability.type"] = haType
			}})
			fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
			id := fc.Status.Components.Job.ID
			w.during(t, 3*time.Minute, "the job runs on under its job ID", func(fc *v1beta1.FlinkCluster) bool {
				w.finishTriggers(false)
				return fc.Status.Components.Job.ID == id && fc.Status.Components.Job.State == v1beta1.JobStateRunning
			})
			fc = w.cluster()
			c := meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionDeploymentFailed)
			require.NotNil(t, c)
			assert.Equal(t, controller.ConditionReasonUnsupportedHA, c.Reason)
			assert.Contains(t, c.Message, haType)
			assert.False(t, slicesContains(w.rec.notes, "Warning "+controller.ReasonHAMetadataMissing), "no HA check of ConfigMaps this HA does not write")
			assert.Equal(t, 1, w.truthOf(id).mains)
			assert.Equal(t, 0, countPrefix(w.rec.notes, "Normal "+controller.ReasonSavepointTriggered), "no savepoint taken for a redeploy")

			// The JobManager Deployment deleted: created again under the same job ID (its
			// JobManager recovers from ZooKeeper when the data is there), never marked Failed
			// for want of Kubernetes HA ConfigMaps.
			w.deleteWorkload()
			w.until(t, "the Deployment created again", 20, func(*v1beta1.FlinkCluster) bool {
				wl := w.workload()
				return wl != nil && wl.jobID == id
			})
			for _, n := range w.rec.notes {
				assert.NotContains(t, n, "is missing and the HA metadata the job would recover from is gone")
			}
		})
	}
}

// With rest.address set, the REST leader address names no pod; the dispatcher's RPC address
// names the leader's pod IP. A stuck Terminating pod that no longer leads blocks nothing: the
// controller trusts the new leader.
func TestLeaderFoundWithRESTAddressSet(t *testing.T) {
	w := newWorldWith(t, 13, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment, build: func(fc *v1beta1.FlinkCluster) {
		fc.Spec.FlinkProperties["rest.address"] = "wc-jobmanager"
	}})
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id := fc.Status.Components.Job.ID
	lost := w.leader()
	w.loseNode(lost)
	// The node monitor grace (50 s) and the JobManager's toleration (30 s) pass before the pod
	// is evicted and replaced, then the lost leader's lease runs out.
	w.until(t, "a new JobManager leads and runs the job", 180, func(*v1beta1.FlinkCluster) bool {
		l := w.leader()
		return l != nil && l != lost && l.jm.JobState(id) == flinkclient.JobStateRunning
	})
	w.annotate(v1beta1.ControlAnnotation, v1beta1.ControlNameSavepoint)
	fc = w.until(t, "a savepoint through the new leader", 30, func(fc *v1beta1.FlinkCluster) bool {
		if c := meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionWaiting); c != nil && c.Status == "True" {
			require.NotContains(t, c.Message, "may still lead", "the leader is known: the stuck pod blocks nothing\n%s", w.dump())
		}
		w.finishTriggers(false)
		return fc.Status.Components.Job.SavepointLocation != ""
	})
	assert.Equal(t, w.newestSavepoint(), fc.Status.Components.Job.SavepointLocation)
	assert.True(t, slicesHasPod(w.jmPods(), lost.pod), "the lost node's pod is still Terminating")
	noViolations(t, w)
}

// The leading JobManager's node is lost and its pod stays Terminating; the Deployment's new
// pod takes the leadership. The stuck pod, which no longer leads, blocks nothing: the
// controller trusts the new leader, takes savepoints and sees the job fail.
func TestStuckTerminatingPodThatDoesNotLeadBlocksNothing(t *testing.T) {
	w := newWorldWith(t, 13, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment})
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id := fc.Status.Components.Job.ID
	lost := w.leader()
	w.loseNode(lost)
	// The node monitor grace (50 s) and the JobManager's toleration (30 s) first.
	w.until(t, "a new JobManager leads and runs the job", 80, func(*v1beta1.FlinkCluster) bool {
		l := w.leader()
		return l != nil && l != lost && l.jm.JobState(id) == flinkclient.JobStateRunning
	})
	w.annotate(v1beta1.ControlAnnotation, v1beta1.ControlNameSavepoint)
	fc = w.until(t, "a savepoint", 30, func(fc *v1beta1.FlinkCluster) bool {
		w.finishTriggers(false)
		return fc.Status.Components.Job.SavepointLocation != ""
	})
	assert.Equal(t, w.newestSavepoint(), fc.Status.Components.Job.SavepointLocation)
	w.jobEvent(flinkclient.JobStateFailed)
	w.until(t, "the failure is seen", 20, jobIs(v1beta1.JobStateFailed))
	assert.True(t, slicesHasPod(w.jmPods(), lost.pod), "the lost node's pod is still Terminating")
	noViolations(t, w)
}

// The bound: the only JobManager pod of a Job-mode deploy is on a lost node and stays
// Terminating; no JobManager leads and none will. The controller says what it waits for
// (Waiting) and, past the wait bound, that it waited too long (WaitExceeded).
func TestWaitWithoutLeaderIsBounded(t *testing.T) {
	w := newWorldWith(t, 14, &setup{mode: v1beta1.JobManagerDeploymentTypeJob})
	w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	lost := w.leader()
	w.loseNode(lost)
	fc := w.until(t, "Waiting", 60, conditionIs(controller.ConditionWaiting, ""))
	since := meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionWaiting).LastTransitionTime.Time
	fc = w.until(t, "WaitExceeded", 300, func(*v1beta1.FlinkCluster) bool {
		w.clock.Step(5 * time.Second)
		return slicesContains(w.rec.notes, "Warning "+controller.ReasonWaitExceeded)
	})
	c := meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionWaiting)
	require.NotNil(t, c)
	assert.Equal(t, since, c.LastTransitionTime.Time, "one wait, from the pod's loss")
	assert.GreaterOrEqual(t, w.clock.Now().Sub(since), waitBound, "exceeded only past the bound")
	assert.Contains(t, c.Message, "longer than the wait bound", "the condition says the bound passed")
	assert.True(t, slicesHasPod(w.jmPods(), lost.pod), "the lost node's pod is still Terminating")
	noViolations(t, w)
}

// randomHAConfiguration draws HA settings for the random generator
// (TestInvariants): rest.address set to the JobManager Service (the REST leader address then
// names no pod) and Flink's lease duration (which the fake's leases and the controller's
// grace both read). ZooKeeper and custom HA factories are drawn for their denial
// (drawUnsupportedHA) and covered by TestDeploymentWithUnsupportedHANeverLoops: the fake
// models Kubernetes HA only, so a random ZooKeeper cluster would test the fake's absence of
// ZooKeeper, not the controller. The controller's clock skew is drawn in newWorldWith.
func randomHAConfiguration(rng *rand.Rand, fc *v1beta1.FlinkCluster) {
	if rng.Intn(4) == 0 {
		fc.Spec.FlinkProperties[fakeflink.PropRESTAddress] = resources.JobManagerName(fc.Name)
	}
	if rng.Intn(3) == 0 {
		fc.Spec.FlinkProperties[flinkha.LeaseDurationKey] = []string{"5 s", "30 s", "60000"}[rng.Intn(3)]
	}
}

// drawUnsupportedHA draws, for a sixth of the Deployment clusters, HA services the
// controller cannot check (ZooKeeper, a custom factory class) and checks that the webhook's
// policy denies the cluster with rule deployment-requires-kubernetes-ha (the CRD's CEL rule
// mirrors it, with parity tests); it returns the violation when the policy admits it. The
// cluster the sequence then runs is the one the webhook admits: with Kubernetes HA. From its
// own generator (seeded from the world's seed), so that the other draws of a seed stay as
// they were.
func drawUnsupportedHA(seed int64, fc *v1beta1.FlinkCluster) (drawn, violation string) {
	rng := rand.New(rand.NewSource(seed ^ 0x2bad4a))
	if fc.Spec.GetDeploymentType() != v1beta1.JobManagerDeploymentTypeDeployment || rng.Intn(6) != 0 {
		return "", ""
	}
	haType := []string{"zookeeper", "ZOOKEEPER", "org.example.flink.MyHaServicesFactory"}[rng.Intn(3)]
	denied := fc.DeepCopy()
	denied.Spec.FlinkProperties[flinkcluster.PropertyHAType] = haType
	errs, _ := policy.ValidateCreate(denied)
	for _, e := range errs {
		if e.Origin == policy.RuleDeploymentRequiresKubernetesHA {
			return haType, ""
		}
	}
	return haType, fmt.Sprintf("the policy admits a JobManager Deployment with high-availability.type %s: %v", haType, errs)
}

// The generator's ZooKeeper and factory-class draws happen, and each is denied.
func TestGeneratorDrawsUnsupportedHAForItsDenial(t *testing.T) {
	drawn := map[string]int{}
	for seed := int64(0); seed < 600; seed++ {
		fc := builder.MakeAppCluster(name).Deployment().Obj()
		ha, violation := drawUnsupportedHA(seed, fc)
		require.Empty(t, violation)
		if ha != "" {
			drawn[ha]++
		}
	}
	assert.Len(t, drawn, 3, "every unsupported HA type drawn: %v", drawn)
}
