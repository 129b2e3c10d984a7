package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// requireValid checks a condition against the API's rules for metav1.Condition (the CRD
// schema enforces the same): a reason the API server would refuse must fail here first.
func requireValid(t *testing.T, c metav1.Condition) {
	t.Helper()
	if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = metav1.NewTime(t0)
	}
	require.Empty(t, metav1validation.ValidateCondition(c, field.NewPath("status", "conditions")), "%+v", c)
}

func TestSetConditionTimes(t *testing.T) {
	var conds []metav1.Condition
	flipped := setCondition(&conds, condition(ConditionLost, metav1.ConditionFalse, ConditionReasonJobTracked, "job is Running"), t0)
	assert.False(t, flipped, "a new condition is not a flip")
	require.Len(t, conds, 1)
	assert.Equal(t, t0, conds[0].LastTransitionTime.Time, "the injected time, never time.Now")

	flipped = setCondition(&conds, condition(ConditionLost, metav1.ConditionTrue, ConditionReasonJobNotReported, "not reported"), t0.Add(time.Minute))
	assert.True(t, flipped)
	assert.Equal(t, t0.Add(time.Minute), conds[0].LastTransitionTime.Time, "a status change takes the new time")

	flipped = setCondition(&conds, condition(ConditionLost, metav1.ConditionTrue, ConditionReasonLostTimeout, "timed out"), t0.Add(time.Hour))
	assert.False(t, flipped)
	assert.Equal(t, t0.Add(time.Minute), conds[0].LastTransitionTime.Time, "same status: the time it became Lost is kept")
	assert.Equal(t, ConditionReasonLostTimeout, conds[0].Reason, "reason and message follow")
	assert.Equal(t, t0.Add(time.Minute), lostSince(conds))

	observedGeneration(conds, 7)
	assert.Equal(t, int64(7), conds[0].ObservedGeneration)
}

func TestLostSince(t *testing.T) {
	assert.True(t, lostSince(nil).IsZero(), "no condition")
	conds := []metav1.Condition{{Type: ConditionLost, Status: metav1.ConditionFalse, LastTransitionTime: metav1.NewTime(t0)}}
	assert.True(t, lostSince(conds).IsZero(), "a False Lost condition is no Lost time")
	conds[0].Status = metav1.ConditionTrue
	assert.Equal(t, t0, lostSince(conds))
}

func TestManagedCondition(t *testing.T) {
	tests := []struct {
		name   string
		fc     *v1beta1.FlinkCluster
		status metav1.ConditionStatus
		reason string
		msg    string
	}{
		{"managed: Application mode", builder.MakeAppCluster("wc").Obj(), metav1.ConditionTrue, ConditionReasonApplicationMode, "this controller runs the cluster"},
		{"not managed: Detached mode", builder.MakeAppCluster("wc").JobMode(v1beta1.JobModeDetached).Obj(), metav1.ConditionFalse, ConditionReasonNotApplicationMode, "job mode Detached is not managed"},
		{"not managed: session cluster", func() *v1beta1.FlinkCluster {
			fc := builder.MakeAppCluster("wc").Obj()
			fc.Spec.Job = nil
			return fc
		}(), metav1.ConditionFalse, ConditionReasonNotApplicationMode, "job mode session cluster is not managed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := managedCondition(tc.fc)
			assert.Equal(t, ConditionManaged, c.Type)
			assert.Equal(t, tc.status, c.Status)
			assert.Equal(t, tc.reason, c.Reason)
			assert.Contains(t, c.Message, tc.msg)
			requireValid(t, c)
		})
	}
}

func TestJobManagerReadyCondition(t *testing.T) {
	ready := builder.SetRunning(builder.Pod("wc", "wc-jm-1", "wc-r1", t0), t0)
	starting := builder.Pod("wc", "wc-jm-1", "wc-r1", t0)
	crash := builder.SetCrashLoop(builder.Pod("wc", "wc-jm-1", "wc-r1", t0), t0, 3, time.Second, 1, "boom")
	wl := &state.Workload{Revision: "wc-r1"}

	tests := []struct {
		name     string
		kind     string
		wl       *state.Workload
		replicas *int32
		pod      *corev1.Pod
		status   metav1.ConditionStatus
		reason   string
		msg      string
	}{
		{"ready: the Deployment's pod is ready", "Deployment", wl, ptr.To[int32](1), ready, metav1.ConditionTrue, ConditionReasonPodReady, "JobManager pod wc-jm-1 is ready"},
		{"ready: the Job's pod is ready", "Job", wl, nil, ready, metav1.ConditionTrue, ConditionReasonPodReady, "JobManager pod wc-jm-1 is ready"},
		{"not ready: no workload", "Deployment", nil, nil, nil, metav1.ConditionFalse, ConditionReasonJobManagerMissing, "no JobManager Deployment"},
		{"not ready: workload being deleted, its pod still ready", "Job", &state.Workload{Deleting: true}, nil, ready, metav1.ConditionFalse, ConditionReasonJobManagerMissing, "the JobManager Job is being deleted"},
		{"not ready: Deployment scaled to 0", "Deployment", wl, ptr.To[int32](0), nil, metav1.ConditionFalse, ConditionReasonScaledToZero, "the JobManager Deployment is scaled to 0"},
		{"not ready: no pod yet", "Deployment", wl, ptr.To[int32](1), nil, metav1.ConditionFalse, ConditionReasonPodNotReady, "no JobManager pod yet"},
		{"not ready: pod not started", "Job", wl, nil, starting, metav1.ConditionFalse, ConditionReasonPodNotReady, "JobManager pod wc-jm-1 is not started, not ready"},
		{"not ready: pod crash-looping", "Deployment", wl, ptr.To[int32](1), crash, metav1.ConditionFalse, ConditionReasonPodNotReady, "JobManager pod wc-jm-1 is Running, not ready"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := jobManagerReadyCondition(tc.kind, tc.wl, tc.replicas, tc.pod)
			assert.Equal(t, ConditionJobManagerReady, c.Type)
			assert.Equal(t, tc.status, c.Status)
			assert.Equal(t, tc.reason, c.Reason)
			assert.Equal(t, tc.msg, c.Message)
			requireValid(t, c)
		})
	}
}

func TestUpdatingCondition(t *testing.T) {
	step := condition(ConditionUpdating, metav1.ConditionTrue, ConditionReasonWaitingForJobManagerPods, "waiting")
	updating := &metav1.Condition{Type: ConditionUpdating, Status: metav1.ConditionTrue, Reason: ConditionReasonDeployingNextRevision}
	upToDate := &metav1.Condition{Type: ConditionUpdating, Status: metav1.ConditionFalse, Reason: ConditionReasonUpToDate}

	tests := []struct {
		name     string
		prev     *metav1.Condition
		step     *metav1.Condition
		pending  bool
		jobState string
		// want is "" when the recorded condition is left as it is, else "Status/Reason".
		want string
	}{
		{"updating: the update flow's step", upToDate, &step, true, v1beta1.JobStateUpdating, "True/WaitingForJobManagerPods"},
		{"kept: update pending, no step reached (an error)", updating, nil, true, v1beta1.JobStateUpdating, ""},
		{"kept: the next revision's job is deploying", updating, nil, false, v1beta1.JobStateDeploying, ""},
		{"kept: the next revision's Deployment is created again", updating, nil, false, v1beta1.JobStatePending, ""},
		{"converged: the next revision's job runs", updating, nil, false, v1beta1.JobStateRunning, "False/UpToDate"},
		{"converged: the next revision's deployment failed", updating, nil, false, v1beta1.JobStateDeployFailed, "False/UpToDate"},
		{"up to date: a new cluster deploying its first revision", nil, nil, false, v1beta1.JobStateDeploying, "False/UpToDate"},
		{"up to date: never updated", upToDate, nil, false, v1beta1.JobStateDeploying, "False/UpToDate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := updatingCondition(tc.prev, tc.step, tc.pending, tc.jobState, "wc-r2")
			if tc.want == "" {
				assert.Nil(t, c)
				return
			}
			require.NotNil(t, c)
			assert.Equal(t, ConditionUpdating, c.Type)
			assert.Equal(t, tc.want, string(c.Status)+"/"+c.Reason)
			requireValid(t, *c)
		})
	}
	assert.Equal(t, "current revision wc-r2", updatingCondition(nil, nil, false, v1beta1.JobStateRunning, "wc-r2").Message)
}

// TestDeploymentFailureKindsAreConditionReasons: the kinds of failed deployments become the
// DeploymentFailed condition's reason, which the API server checks against a pattern.
func TestDeploymentFailureKindsAreConditionReasons(t *testing.T) {
	kinds := []string{state.FailedCreate, "CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError", "InvalidImageName", "CreateContainerError"}
	for _, k := range kinds {
		pod := builder.SetWaiting(builder.Pod("wc", "p", "r", t0), t0, k, "message")
		if k == "CrashLoopBackOff" {
			pod = builder.SetCrashLoop(builder.Pod("wc", "p", "r", t0), t0, 3, time.Second, 1, "message")
		}
		if k != state.FailedCreate {
			got, _ := state.PodFailure(pod)
			assert.Equal(t, k, got, "the pod failure's kind")
		}
		requireValid(t, condition(ConditionDeploymentFailed, metav1.ConditionTrue, k, "message"))
	}
	for _, r := range []string{ConditionReasonStoppingWithSavepoint, ConditionReasonDeployingNextRevision, ConditionReasonNoFailure, ConditionReasonLostTimeout, ConditionReasonJobNotReported, ConditionReasonJobTracked} {
		requireValid(t, condition(ConditionLost, metav1.ConditionTrue, r, ""))
	}
}

// TestNotManagedCondition: a cluster this controller leaves alone gets Managed and Ready False,
// written with the whole status (the schema requires state and components) and stamped with
// the generation, in status.observedGeneration too; the write is not repeated while nothing
// changes.
func TestNotManagedCondition(t *testing.T) {
	fc := builder.MakeAppCluster("wc").JobMode(v1beta1.JobModeDetached).Obj()
	fc.Generation = 3
	r, cl := reconcilerWith(t, fc, func() error { return nil })
	_, err := r.Reconcile(t.Context(), reqFor(fc))
	require.NoError(t, err)
	got := &v1beta1.FlinkCluster{}
	require.NoError(t, cl.Get(t.Context(), keyOf(fc), got))
	c := meta.FindStatusCondition(got.Status.Conditions, ConditionManaged)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, ConditionReasonNotApplicationMode, c.Reason)
	assert.Equal(t, int64(3), c.ObservedGeneration)
	ready := meta.FindStatusCondition(got.Status.Conditions, ConditionReady)
	require.NotNil(t, ready, "Ready is said, so that kubectl wait --for=condition=Ready answers")
	assert.Equal(t, metav1.ConditionTrue, ready.Status, "Current and Healthy, as docs/troubleshooting.md reads it")
	assert.Equal(t, ConditionReasonNotApplicationMode, ready.Reason)
	assert.Equal(t, int64(3), ready.ObservedGeneration)
	assert.Equal(t, int64(3), got.Status.ObservedGeneration, "kstatus reads the generation the controller saw")
	assert.Len(t, got.Status.Conditions, 2, "only Managed and Ready: nothing else is run")
	assert.Empty(t, got.Finalizers, "no finalizer on a cluster left alone")

	rv := got.ResourceVersion
	_, err = r.Reconcile(t.Context(), reqFor(fc))
	require.NoError(t, err)
	require.NoError(t, cl.Get(t.Context(), keyOf(fc), got))
	assert.Equal(t, rv, got.ResourceVersion, "no write when nothing changed")
}

func keyOf(fc *v1beta1.FlinkCluster) types.NamespacedName {
	return types.NamespacedName{Namespace: fc.Namespace, Name: fc.Name}
}

func reqFor(fc *v1beta1.FlinkCluster) ctrl.Request { return ctrl.Request{NamespacedName: keyOf(fc)} }
