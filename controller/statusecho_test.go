package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

func TestOnlyStatusChangesAreDropped(t *testing.T) {
	now := metav1.Now()
	tests := []struct {
		name    string
		edit    func(fc *v1beta1.FlinkCluster)
		dropped bool
	}{
		{"status only: dropped", func(fc *v1beta1.FlinkCluster) { fc.Status.State = "Running"; fc.ResourceVersion = "2" }, true},
		{"spec (generation): kept", func(fc *v1beta1.FlinkCluster) { fc.Generation++ }, false},
		{"annotation (a control, a restore answer): kept", func(fc *v1beta1.FlinkCluster) {
			fc.Annotations = map[string]string{v1beta1.ControlAnnotation: v1beta1.ControlNameSavepoint}
		}, false},
		{"label (the scope): kept", func(fc *v1beta1.FlinkCluster) { fc.Labels = map[string]string{"team": "a"} }, false},
		{"finalizer: kept", func(fc *v1beta1.FlinkCluster) { fc.Finalizers = []string{Finalizer} }, false},
		{"owner: kept", func(fc *v1beta1.FlinkCluster) { fc.OwnerReferences = []metav1.OwnerReference{{Name: "x", UID: "u"}} }, false},
		{"deletion: kept", func(fc *v1beta1.FlinkCluster) { fc.DeletionTimestamp = &now }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := builder.MakeAppCluster("wc").Obj()
			old.ResourceVersion, old.Generation = "1", 1
			cur := old.DeepCopy()
			tc.edit(cur)
			assert.Equal(t, tc.dropped, statusOnly(old, cur))
		})
	}
}

func TestDecisionRecordLeavesOutWhatEachObservationDerives(t *testing.T) {
	st := &v1beta1.FlinkClusterStatus{Components: v1beta1.FlinkClusterComponentsStatus{Job: &v1beta1.JobStatus{ID: "a", State: v1beta1.JobStateDeploying}}}
	rec := decisionRecord(st)
	derived := st.DeepCopy()
	derived.State, derived.LastUpdateTime, derived.ObservedGeneration = "Running", "now", 4
	derived.Components.JobManager = &v1beta1.JobManagerStatus{Name: "wc-jobmanager"}
	for _, typ := range []string{ConditionReady, ConditionReconciling, ConditionStalled, ConditionManaged, ConditionJobManagerReady, ConditionWaiting} {
		derived.Conditions = append(derived.Conditions, condition(typ, metav1.ConditionTrue, "Reason", "message"))
	}
	assert.Equal(t, rec, decisionRecord(derived), "derived anew from each observation")

	for name, edit := range map[string]func(st *v1beta1.FlinkClusterStatus){
		"the job's state": func(st *v1beta1.FlinkClusterStatus) { st.Components.Job.State = v1beta1.JobStateRunning },
		"the revision":    func(st *v1beta1.FlinkClusterStatus) { st.Revision.NextRevision = "r2" },
		"a control": func(st *v1beta1.FlinkClusterStatus) {
			st.Control = &v1beta1.FlinkClusterControlStatus{Name: v1beta1.ControlNameSavepoint}
		},
		"a savepoint": func(st *v1beta1.FlinkClusterStatus) { st.Savepoint = &v1beta1.SavepointStatus{TriggerID: "t"} },
		"an outcome's condition": func(st *v1beta1.FlinkClusterStatus) {
			st.Conditions = append(st.Conditions, condition(ConditionSavepointRequired, metav1.ConditionTrue, "Reason", "message"))
		},
	} {
		edited := st.DeepCopy()
		edit(edited)
		assert.NotEqual(t, rec, decisionRecord(edited), name)
	}
}

// TestANewRecordIsActedOnAtOnce: the controller drops the echo of its own status writes, so
// a reconcile that recorded a step (a first deploy's job, its JobManager created) looks again
// at once; one that recorded nothing new waits for its poll or the next change.
func TestANewRecordIsActedOnAtOnce(t *testing.T) {
	fc := builder.MakeAppCluster("wc").DeploymentType(v1beta1.JobManagerDeploymentTypeDeployment).Obj()
	r, _ := reconcilerWith(t, fc, func() error { return nil })
	res, err := r.Reconcile(t.Context(), reqFor(fc))
	require.NoError(t, err)
	assert.Equal(t, lookAgainNow, res.RequeueAfter, "the deploy was recorded")

	res, err = r.Reconcile(t.Context(), reqFor(fc))
	require.NoError(t, err)
	assert.Equal(t, lookAgainNow, res.RequeueAfter, "its JobManager's creation was recorded")

	res, err = r.Reconcile(t.Context(), reqFor(fc))
	require.NoError(t, err)
	assert.Greater(t, res.RequeueAfter, lookAgainNow, "nothing new recorded: the JobManager's pod is waited for")
}
