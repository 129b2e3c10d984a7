package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/flink-admission/flink-admission/internal/test/builder"
)

// The wait for old JobManager pods records one Event when it begins, not one per look; a wait
// of the same reason begun by the update's deletion of the workload (replaceJobManager's
// message) has had none, so the first look of waitForNoLeader records it (the realplane
// scenario 1's second update saw none when the deletion's wait was recorded first).
func TestWaitingForPodsIsToldOncePerWait(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	deleted := metav1.NewTime(now.Add(-time.Second))
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "wc-jobmanager-6fdbc5849b-kn8gn", DeletionTimestamp: &deleted,
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "wc-jobmanager-6fdbc5849b", Controller: ptrTo(true)}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	ours := waitCondition(ConditionReasonWaitingForJobManagerPods, "waiting for the old JobManager pods to be gone: %s", podNames([]corev1.Pod{pod}))
	for _, tc := range []struct {
		name      string
		was       *metav1.Condition
		wantEvent bool
	}{
		{name: "no wait recorded: the wait begins, an Event", wantEvent: true},
		{name: "the workload's deletion recorded the wait, without an Event: an Event", wantEvent: true,
			was: waitCondition(ConditionReasonWaitingForJobManagerPods, "deleted the JobManager of revision wc-r1: waiting for its pods to be gone: %s", podNames([]corev1.Pod{pod}))},
		{name: "another wait recorded: an Event", wantEvent: true,
			was: waitCondition(ConditionReasonWaitingForJobManagerDeletion, "waiting for the old JobManager workload (revision wc-r1) to be deleted")},
		{name: "this wait recorded by the last look: no Event", was: ours},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := builder.MakeAppCluster("wc").Deployment().Obj()
			if tc.was != nil {
				fc.Status.Conditions = []metav1.Condition{*tc.was}
			}
			rec := events.NewFakeRecorder(10)
			c := &cycle{r: &Reconciler{Recorder: rec}, fc: fc, read: *fc.Status.DeepCopy(), st: &fc.Status, now: now}
			c.obs.pods = []corev1.Pod{pod}
			w, err := c.waitForNoLeader(context.Background())
			require.NoError(t, err)
			require.NotNil(t, w, "the deleted pod may still lead: the controller waits")
			assert.Equal(t, ours.Message, w.Message)
			if !tc.wantEvent {
				assert.Empty(t, rec.Events)
				return
			}
			require.Len(t, rec.Events, 1)
			got := <-rec.Events
			assert.Contains(t, got, ReasonWaitingForPods)
			assert.Contains(t, got, pod.Name)
		})
	}
}
