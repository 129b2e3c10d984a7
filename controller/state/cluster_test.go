package state_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

func TestCleanupAction(t *testing.T) {
	spec := &builder.MakeAppCluster("wc").CleanupPolicy("KeepCluster", "DeleteTaskManager", "DeleteCluster").Obj().Spec
	assert.Equal(t, v1beta1.CleanupActionKeepCluster, state.CleanupAction(spec, "Succeeded"))
	assert.Equal(t, v1beta1.CleanupActionDeleteTaskManager, state.CleanupAction(spec, "Failed"))
	assert.Equal(t, v1beta1.CleanupActionDeleteTaskManager, state.CleanupAction(spec, "DeployFailed"))
	assert.Equal(t, v1beta1.CleanupActionDeleteTaskManager, state.CleanupAction(spec, "Lost"), "a timed-out Lost job is a failure")
	assert.Equal(t, v1beta1.CleanupActionDeleteCluster, state.CleanupAction(spec, "Cancelled"))

	spec.Job.CleanupPolicy = nil
	assert.Equal(t, v1beta1.CleanupActionDeleteCluster, state.CleanupAction(spec, "Succeeded"), "CRD defaults")
	assert.Equal(t, v1beta1.CleanupActionKeepCluster, state.CleanupAction(spec, "Failed"), "CRD defaults")
}

func TestClusterState(t *testing.T) {
	all := state.Components{JobManager: true, TaskManager: true, Service: true, ConfigMap: true, JobManagerPods: 1}
	tests := []struct {
		name     string
		job      string
		updating bool
		finished bool
		action   v1beta1.CleanupAction
		c        state.Components
		want     string
	}{
		{"running job: Running", "Running", false, false, "", all, "Running"},
		{"deploying job: Creating", "Deploying", false, false, "", all, "Creating"},
		{"lost job: Reconciling", "Lost", false, false, "", all, "Reconciling"},
		{"update in flight: Updating", "Updating", true, false, "", all, "Updating"},
		{"DeleteCluster with objects left: Stopping", "Succeeded", false, true, "DeleteCluster", all, "Stopping"},
		{"DeleteCluster with a terminating JobManager pod: Stopping", "Succeeded", false, true, "DeleteCluster", state.Components{JobManagerPods: 1}, "Stopping"},
		{"everything gone: Stopped", "Failed", false, true, "DeleteCluster", state.Components{}, "Stopped"},
		{"KeepCluster: PartiallyStopped", "Failed", false, true, "KeepCluster", all, "PartiallyStopped"},
		{"DeleteTaskManager done: PartiallyStopped", "Failed", false, true, "DeleteTaskManager", state.Components{JobManager: true, Service: true, ConfigMap: true}, "PartiallyStopped"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, state.ClusterState(tc.job, tc.updating, tc.finished, tc.action, tc.c))
		})
	}
}
