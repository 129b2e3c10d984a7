package simulation_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
)

// A savepoint a deploy restores is never disposed of, however the restore names it: the
// history holds the location as Flink reports it (file:/…), while the user's
// spec.job.fromSavepoint names the same savepoint by its _metadata file, or as file:///…/.
// Flink restores and disposes of all these spellings alike, so disposing of "another"
// savepoint would delete the one the running deploy restored.
func TestDisposalKeepsTheRestoredSavepointInAnySpelling(t *testing.T) {
	cases := []struct {
		name  string
		spell func(loc string) string
	}{
		{name: "its _metadata file", spell: func(loc string) string { return loc + "/_metadata" }},
		{name: "file:/// with a trailing slash", spell: func(loc string) string { return "file:///" + strings.TrimPrefix(loc, "file:/") + "/" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := deploymentWorld(t, func(fc *v1beta1.FlinkCluster) {
				// Flink's own spelling of a local directory, which its savepoint locations keep.
				fc.Spec.Job.SavepointsDir = ptr.To("file:/savepoints")
				fc.Spec.Job.SavepointsToKeep = ptr.To[int32](1)
			})
			require.NoError(t, w.admit(t, func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.SavepointGeneration = 1 }))
			w.settle(1)
			w.finishTriggers(false)
			w.until(t, "the first savepoint", 10, func(fc *v1beta1.FlinkCluster) bool { return fc.Status.Components.Job.SavepointGeneration == 1 })
			require.Len(t, w.savepoints, 1)
			first := w.savepoints[0]
			require.True(t, strings.HasPrefix(first, "file:/savepoints/"), "Flink's spelling: %s", first)
			restore := tc.spell(first)

			firstJob := w.cluster().Status.Components.Job.ID
			require.NoError(t, w.admit(t, func(fc *v1beta1.FlinkCluster) {
				fc.Spec.Job.Args = []string{"--v2"}
				fc.Spec.Job.FromSavepoint = &restore
			}))
			fc := w.until(t, "the deploy restoring it", 40, func(fc *v1beta1.FlinkCluster) bool {
				return fc.Status.Components.Job.ID != firstJob && fc.Status.Components.Job.State == v1beta1.JobStateRunning
			})
			require.Equal(t, restore, w.fromOf[fc.Status.Components.Job.ID], "the deploy restores the user's spelling")
			require.Len(t, w.savepoints, 1, "an update naming fromSavepoint takes no savepoint")

			require.NoError(t, w.admit(t, func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.SavepointGeneration = 2 }))
			w.settle(1)
			w.finishTriggers(false)
			w.until(t, "the second savepoint", 10, func(fc *v1beta1.FlinkCluster) bool { return fc.Status.Components.Job.SavepointGeneration == 2 })
			require.Len(t, w.savepoints, 2)
			// savepointsToKeep 1 disposes of all but the newest, but for the restored one.
			w.settle(10)

			fc = w.cluster()
			assert.True(t, w.fl.SavepointExists(first), "the restored savepoint %s is on the storage", first)
			var history []string
			for _, r := range fc.Status.SavepointHistory {
				history = append(history, r.Location)
			}
			assert.Equal(t, []string{first, w.savepoints[1]}, history, "the restored savepoint stays in the history")
			assert.Zero(t, eventsWith(w, controller.ReasonSavepointDisposed))
			noViolations(t, w)
		})
	}
}
