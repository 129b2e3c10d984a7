package controller

import (
	"flag"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

func TestBindFlags(t *testing.T) {
	var o Options
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.BindFlags(fs)
	assert.Equal(t, DefaultHARecoveryGrace, o.HARecoveryGrace)
	assert.Equal(t, DefaultLostTimeout, o.LostTimeout)
	assert.Equal(t, DefaultRequeueInterval, o.RequeueInterval)
	require.NoError(t, fs.Parse([]string{"--ha-recovery-grace=1m", "--lost-job-timeout=2m", "--flink-poll-interval=3s", "--controller-workers=7"}))
	assert.Equal(t, time.Minute, o.HARecoveryGrace)
	assert.Equal(t, 2*time.Minute, o.LostTimeout)
	assert.Equal(t, 3*time.Second, o.RequeueInterval)
	assert.Equal(t, 7, o.MaxConcurrentReconciles)
}

func TestCompleteOptions(t *testing.T) {
	o, err := Options{}.complete()
	require.NoError(t, err)
	assert.NotNil(t, o.Clock)
	assert.NotNil(t, o.FlinkClientFor)
	assert.Equal(t, DefaultHARecoveryGrace, o.HARecoveryGrace)

	_, err = Options{LostTimeout: -time.Second}.complete()
	assert.Error(t, err, "negative timers are refused")
}

func TestDefaultFlinkClient(t *testing.T) {
	fc := builder.MakeAppCluster("wc").Namespace("flink").Obj()
	cl, err := DefaultFlinkClient(fc)
	require.NoError(t, err)
	assert.IsType(t, &flinkclient.HTTPClient{}, cl)
}

func TestJobsByStateMetric(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	a, b := types.NamespacedName{Namespace: "n", Name: "a"}, types.NamespacedName{Namespace: "n", Name: "b"}
	m.setJobState(a, "Running")
	m.setJobState(b, "Running")
	assert.Equal(t, 2.0, testutil.ToFloat64(m.jobs.WithLabelValues("Running")))
	m.setJobState(b, "Failed")
	assert.Equal(t, 1.0, testutil.ToFloat64(m.jobs.WithLabelValues("Running")))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.jobs.WithLabelValues("Failed")))
	m.setJobState(a, "")
	assert.Equal(t, 0, testutil.CollectAndCount(m.jobs, "flinkcluster_controller_jobs")-1, "only Failed is left")

	m.observe(nil)
	m.observe(assert.AnError)
	assert.Equal(t, 1.0, testutil.ToFloat64(m.reconciles.WithLabelValues("success")))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.errors))

	again, err := newMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	assert.NotSame(t, m.jobs, again.jobs)
}

func TestMetricsRegisterOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, err := newMetrics(reg)
	require.NoError(t, err)
	_, err = newMetrics(reg)
	assert.ErrorAs(t, err, &prometheus.AlreadyRegisteredError{}, "a registry holds the controller's metrics once")

	first, err := registryMetrics()
	require.NoError(t, err)
	second, err := registryMetrics()
	require.NoError(t, err)
	assert.Same(t, first, second, "every Setup in one process shares the metrics on controller-runtime's registry")
}
