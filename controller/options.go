// Package controller runs application-mode FlinkClusters: it creates and owns the Flink
// configuration, the JobManager Service and workload (a batch Job or a Deployment) and the
// TaskManagers, follows the job through the Flink REST API, and carries it through updates,
// user controls, failures, cleanup and deletion.
package controller

import (
	"cmp"
	"crypto/tls"
	"flag"
	"fmt"
	"net/http"
	"time"

	"k8s.io/utils/clock"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/controller/shard"
	"github.com/flink-admission/flink-admission/scope"
)

// Defaults of Options.
const (
	DefaultHARecoveryGrace         = 5 * time.Minute
	DefaultLostTimeout             = 10 * time.Minute
	DefaultRequeueInterval         = 10 * time.Second
	DefaultSteadyPollInterval      = 30 * time.Second
	DefaultResyncInterval          = 5 * time.Minute
	DefaultFlinkPollers            = 16
	DefaultMaxConcurrentReconciles = 8
	DefaultWaitBound               = 5 * time.Minute
	// DefaultSavepointTimeout outlasts Flink's own checkpoint timeout (10 minutes), which fails a
	// slow savepoint first: this deadline catches only a result that never comes.
	DefaultSavepointTimeout = 15 * time.Minute
)

// Options configure the controller.
type Options struct {
	// Clock is the time source of every lifecycle timer.
	Clock clock.Clock
	// HARecoveryGrace is how long a started JobManager may take to report the job before it is Lost.
	HARecoveryGrace time.Duration
	// LostTimeout is how long a Lost job may take to be reported again before afterJobFails applies.
	LostTimeout time.Duration
	// RequeueInterval is how often a job is polled while something is in flight.
	RequeueInterval time.Duration
	// SteadyPollInterval is how often a running job with nothing in flight is polled (by the poller).
	SteadyPollInterval time.Duration
	// ResyncInterval is how often a watched cluster is reconciled anyway: the safety net of the
	// watches and the poller.
	ResyncInterval time.Duration
	// FlinkPollers is how many Flink REST reads the poller runs at once.
	FlinkPollers int
	// FlinkClientFor returns the REST client of a cluster's JobManager.
	FlinkClientFor func(fc *v1beta1.FlinkCluster) (flinkclient.Client, error)
	// FlinkTLSClientFor returns the REST client of a JobManager that serves TLS, configured from
	// the Secret the cluster names (RESTTLSSecretAnnotation).
	FlinkTLSClientFor func(fc *v1beta1.FlinkCluster, cfg *tls.Config) (flinkclient.Client, error)
	// MaxConcurrentReconciles is how many clusters are reconciled at once.
	MaxConcurrentReconciles int
	// WaitBound bounds every wait of the controller: past it, Waiting turns to WaitExceeded and a
	// Warning Event says what it waits for.
	WaitBound time.Duration
	// SavepointTimeout bounds one savepoint from request to trigger and from trigger to result:
	// past it, an untriggered one failed and a triggered one's outcome is unknown (Flink may still
	// complete it).
	SavepointTimeout time.Duration
	// NewID returns a fresh ID in Flink's format (default: random, flinkclient.NewID).
	NewID func() string
	// Scope is the set of FlinkClusters the controller runs (zero: all). A cluster outside it gets
	// nothing, not even Managed=False, so that another controller can run it.
	Scope scope.Scope
	// Shard, when set, makes this replica one of several sharing the clusters in Scope, each
	// reconcile fenced by the membership. Nil reconciles every cluster in Scope.
	Shard *shard.Membership
}

// BindFlags registers the timers as flags.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.DurationVar(&o.HARecoveryGrace, "ha-recovery-grace", DefaultHARecoveryGrace,
		"how long a started JobManager may take to report its job before the job is Lost")
	fs.DurationVar(&o.LostTimeout, "lost-job-timeout", DefaultLostTimeout,
		"how long a Lost job may take to be reported again before the afterJobFails cleanup applies")
	fs.DurationVar(&o.RequeueInterval, "flink-poll-interval", DefaultRequeueInterval,
		"how often a job is polled through the Flink REST API while something is in flight (a deploy, an update, a savepoint, a cancel, a restart)")
	fs.DurationVar(&o.SteadyPollInterval, "flink-steady-poll-interval", DefaultSteadyPollInterval,
		"how often a running job with nothing in flight is polled through the Flink REST API (off the reconcile workers)")
	fs.DurationVar(&o.ResyncInterval, "resync-interval", DefaultResyncInterval,
		"how often a running cluster is reconciled although neither its objects nor what Flink reports changed")
	fs.IntVar(&o.FlinkPollers, "flink-pollers", DefaultFlinkPollers,
		"how many Flink REST reads run at once off the reconcile workers")
	fs.DurationVar(&o.WaitBound, "wait-bound", DefaultWaitBound,
		"how long the controller waits on anything (old JobManager pods, the HA leader, the Flink REST API, a savepoint) before status and a Warning Event say what it waits for")
	fs.DurationVar(&o.SavepointTimeout, "savepoint-timeout", DefaultSavepointTimeout,
		"how long one savepoint (or stop-with-savepoint) may take from its request to its trigger, and from its trigger to its result, before it counts as failed (not triggered) or of unknown outcome")
	fs.IntVar(&o.MaxConcurrentReconciles, "controller-workers", DefaultMaxConcurrentReconciles,
		"how many FlinkClusters are reconciled at once")
	// Parsed as they are read, so that a typo is a usage error before anything starts.
	fs.Func("watch-namespaces",
		"comma-separated namespaces whose FlinkClusters the controller runs (default: all); the others are left to another controller",
		func(v string) (err error) {
			o.Scope.Namespaces, err = scope.ParseNamespaces(v)
			return err
		})
	fs.Func("cluster-selector",
		"label selector of the FlinkClusters the controller runs, e.g. flink.example.com/controller=flink-admission (default: all); the others are left to another controller",
		func(v string) (err error) {
			o.Scope.Selector, err = scope.ParseSelector(v)
			return err
		})
}

// complete fills unset options with defaults and rejects nonsensical ones.
func (o Options) complete() (Options, error) {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	o.HARecoveryGrace = cmp.Or(o.HARecoveryGrace, DefaultHARecoveryGrace)
	o.LostTimeout = cmp.Or(o.LostTimeout, DefaultLostTimeout)
	o.RequeueInterval = cmp.Or(o.RequeueInterval, DefaultRequeueInterval)
	o.SteadyPollInterval = cmp.Or(o.SteadyPollInterval, DefaultSteadyPollInterval)
	o.ResyncInterval = cmp.Or(o.ResyncInterval, DefaultResyncInterval)
	o.FlinkPollers = cmp.Or(o.FlinkPollers, DefaultFlinkPollers)
	o.MaxConcurrentReconciles = cmp.Or(o.MaxConcurrentReconciles, DefaultMaxConcurrentReconciles)
	o.WaitBound = cmp.Or(o.WaitBound, DefaultWaitBound)
	o.SavepointTimeout = cmp.Or(o.SavepointTimeout, DefaultSavepointTimeout)
	if o.NewID == nil {
		o.NewID = flinkclient.NewID
	}
	if o.FlinkClientFor == nil {
		o.FlinkClientFor = DefaultFlinkClient
	}
	if o.FlinkTLSClientFor == nil {
		o.FlinkTLSClientFor = DefaultFlinkTLSClient
	}
	if o.HARecoveryGrace < 0 || o.LostTimeout < 0 || o.RequeueInterval < 0 || o.MaxConcurrentReconciles < 0 ||
		o.WaitBound < 0 || o.SavepointTimeout < 0 || o.SteadyPollInterval < 0 || o.ResyncInterval < 0 || o.FlinkPollers < 0 {
		return o, fmt.Errorf("controller timers and workers must not be negative")
	}
	return o, nil
}

// DefaultFlinkClient reaches the cluster's JobManager Service inside the Kubernetes cluster.
func DefaultFlinkClient(fc *v1beta1.FlinkCluster) (flinkclient.Client, error) {
	return flinkclient.New(JobManagerURL(fc), restHTTPClient)
}

// JobManagerURL is the REST endpoint of the cluster's JobManager Service.
func JobManagerURL(fc *v1beta1.FlinkCluster) string {
	_, _, _, ui := resources.JobManagerPorts(fc)
	return fmt.Sprintf("http://%s.%s.svc:%d", resources.JobManagerName(fc.Name), fc.Namespace, ui)
}

// restHTTPClient keeps an idle connection to each JobManager endpoint for longer than the steady
// poll interval (net/http's default keeps 100 in all: past 100 clusters every poll dialled anew).
var restHTTPClient = func() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 0
	tr.MaxIdleConnsPerHost = 2
	tr.IdleConnTimeout = 2 * time.Minute
	return &http.Client{Timeout: flinkclient.DefaultTimeout, Transport: tr}
}()
