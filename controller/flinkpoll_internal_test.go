package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkpoll"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// TestFlinkReadingsComeFromThePollerOnlyWhileNothingIsInFlight guards where a reconcile's
// Flink observation comes from, and how the cluster is polled until the next one: a job that
// runs with nothing in flight takes the poller's fresh reading (no REST call on the worker),
// is polled at the steady interval, and is reconciled again at the resync interval; a job
// not running yet is polled at the poll interval; an update, a user control or a savepoint
// in flight asks Flink itself whatever the poller read, and leaves the poller as a backstop.
func TestFlinkReadingsComeFromThePollerOnlyWhileNothingIsInFlight(t *testing.T) {
	const jobID = "5c7e2a9d1b3f4e6a8c0d2e4f6a8b0c1d"
	flink := fakeflink.NewCluster(fakeflink.Options{})
	t.Cleanup(flink.Close)
	jm := flink.Start(fakeflink.Config{Session: true})
	jm.SetJobs(flinkclient.Job{ID: jobID, Name: "job", State: flinkclient.JobStateRunning})
	cl, err := flinkclient.New(flink.URL(), nil)
	require.NoError(t, err)

	opts, err := Options{RequeueInterval: 10 * time.Second, SteadyPollInterval: 30 * time.Second, ResyncInterval: 5 * time.Minute}.complete()
	require.NoError(t, err)
	opts.FlinkClientFor = func(*v1beta1.FlinkCluster) (flinkclient.Client, error) { return cl, nil }

	for _, tc := range []struct {
		name string
		// jobState is the recorded job state; inFlight puts an operation in flight.
		jobState string
		inFlight func(fc *v1beta1.FlinkCluster)
		// selfPolls is a flow's own look again within the poll interval.
		selfPolls bool

		wantRESTCalls bool
		wantEvery     time.Duration
	}{
		{name: "a running job takes the poller's reading and is polled at the steady interval",
			jobState: v1beta1.JobStateRunning, wantEvery: opts.SteadyPollInterval},
		{name: "a job not running yet is polled at the poll interval",
			jobState: v1beta1.JobStateDeploying, wantEvery: opts.RequeueInterval},
		{name: "an update in flight asks Flink itself",
			jobState: v1beta1.JobStateRunning, wantRESTCalls: true, wantEvery: opts.SteadyPollInterval, selfPolls: true,
			inFlight: func(fc *v1beta1.FlinkCluster) { fc.Status.Revision.NextRevision = "wc-2" }},
		{name: "a user control asks Flink itself",
			jobState: v1beta1.JobStateRunning, wantRESTCalls: true, wantEvery: opts.SteadyPollInterval, selfPolls: true,
			inFlight: func(fc *v1beta1.FlinkCluster) {
				metav1.SetMetaDataAnnotation(&fc.ObjectMeta, v1beta1.ControlAnnotation, v1beta1.ControlNameSavepoint)
			}},
		{name: "a savepoint in flight asks Flink itself",
			jobState: v1beta1.JobStateRunning, wantRESTCalls: true, wantEvery: opts.SteadyPollInterval, selfPolls: true,
			inFlight: func(fc *v1beta1.FlinkCluster) {
				fc.Status.Savepoint = &v1beta1.SavepointStatus{JobID: jobID, TriggerID: "t", State: SavepointStateInProgress}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			polls := flinkpoll.New(flinkpoll.Options{Workers: 1, Timeout: time.Second},
				func(a, b *state.Flink) bool { return equality.Semantic.DeepEqual(a, b) })
			r := &Reconciler{Recorder: events.NewFakeRecorder(10), Options: opts, polls: polls}
			fc := builder.MakeAppCluster("wc").Deployment().Obj()
			fc.Status.Revision = v1beta1.RevisionStatus{CurrentRevision: "wc-1", NextRevision: "wc-1"}
			fc.Status.Components.Job = &v1beta1.JobStatus{ID: jobID, State: tc.jobState}
			if tc.inFlight != nil {
				tc.inFlight(fc)
			}
			cycleOf := func() *cycle {
				c := &cycle{r: r, fc: fc, read: *fc.Status.DeepCopy(), st: &fc.Status, now: time.Now(), mode: v1beta1.JobManagerDeploymentTypeDeployment}
				c.obs.pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "wc-jobmanager-0", UID: "pod-1"}}
				return c
			}

			// A reconcile that found no reading asks Flink and hands the cluster to the poller.
			first := cycleOf()
			first.observeFlink(t.Context())
			require.NotNil(t, first.obs.flink)
			first.trackFlink()
			require.Equal(t, 1, polls.Tracked())

			// The next reconcile, right after.
			before := len(flink.ServiceRequests())
			c := cycleOf()
			c.observeFlink(t.Context())
			require.NotNil(t, c.obs.flink)
			assert.Equal(t, jobID, c.obs.flink.Job.ID)
			assert.Equal(t, tc.wantRESTCalls, len(flink.ServiceRequests()) > before, "REST calls on the worker")

			if tc.selfPolls {
				c.poll()
			} else {
				c.idle()
				assert.Equal(t, opts.ResyncInterval, c.out.requeue, "reconciled again at the resync interval")
			}
			c.trackFlink()
			_, fresh := polls.Latest(c.key(fc.Name), c.obs.flinkTarget)
			assert.True(t, fresh)
			assert.Equal(t, tc.wantEvery, polls.Every(c.key(fc.Name)))
		})
	}
}
