package simulation_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// Status writes: a reconcile writes the status at most once, what it decided before acting
// included (the next reconcile acts on that record), and a reconcile that finds nothing new
// writes nothing. A create records one Event per transition.
func TestAReconcileWritesTheStatusAtMostOnce(t *testing.T) {
	for _, mode := range []v1beta1.JobManagerDeploymentType{v1beta1.JobManagerDeploymentTypeDeployment, v1beta1.JobManagerDeploymentTypeJob} {
		t.Run(string(mode), func(t *testing.T) {
			w := newWorldWith(t, 11, &setup{mode: mode})
			w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
			created := w.statusWrites
			assert.LessOrEqual(t, slices.Max(created), 1, "a create's reconciles: %v", created)
			// One Event per transition: the JobManager created, then the job running.
			require.Len(t, w.rec.notes, 2, "a create's Events: %q", w.rec.notes)
			assert.True(t, strings.HasPrefix(w.rec.notes[0], "Normal JobManagerCreated: "), w.rec.notes[0])
			assert.Contains(t, w.rec.notes[1], "Normal JobStateChanged: ")
			assert.Contains(t, w.rec.notes[1], "Deploying -> Running")

			w.settle(2)
			from := len(w.statusWrites)
			w.settle(10)
			steady := w.statusWrites[from:]
			assert.Equal(t, make([]int, len(steady)), steady, "a running cluster's reconciles write nothing")

			from = len(w.statusWrites)
			old := w.cluster().Status.Components.Job.ID
			w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
			w.until(t, "the next revision runs", 40, func(fc *v1beta1.FlinkCluster) bool {
				w.finishTriggers(false)
				return fc.Status.Components.Job.ID != old && fc.Status.Components.Job.State == v1beta1.JobStateRunning
			})
			updated := w.statusWrites[from:]
			assert.LessOrEqual(t, slices.Max(updated), 1, "an update's reconciles: %v", updated)
			t.Logf("status writes per reconcile: create %v, steady %v, update %v", created, steady, updated)
			noViolations(t, w)
		})
	}
}
