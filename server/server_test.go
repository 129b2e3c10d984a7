package server

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/labels"
)

// TestServeFlagDefaults pins the defaults of `flink-admission serve` to deploy's contract:
// the manifests rely on them (ports, Secret and configuration names, mount path).
func TestServeFlagDefaults(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "flink-admission-system")
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var o Options
	o.BindFlags(fs)
	want := map[string]string{
		"webhook-port":                     "9443",
		"cert-mode":                        "files",
		"cert-dir":                         "/var/run/flink-admission/serving-certs",
		"cert-name":                        "tls.crt",
		"key-name":                         "tls.key",
		"ca-secret-name":                   "flink-admission-ca",
		"namespace":                        "flink-admission-system",
		"service-name":                     "flink-admission-webhook",
		"mutating-webhook-configuration":   "flink-admission",
		"validating-webhook-configuration": "flink-admission",
		"metrics-bind-address":             ":8080",
		"metrics-secure":                   "true",
		"health-probe-bind-address":        ":8081",
		"pprof-bind-address":               "0",
		"log-level":                        "info",
		"enable-controller":                "true",
		"leader-elect":                     "true",
		"shard-fleet":                      "false",
		"client-ca-file":                   "",
		"max-connections":                  "1000",
		"shutdown-drain":                   "10s",
		"max-body-bytes-in-flight":         "64Mi",
		"audit-interval":                   "10m0s",
	}
	for name, def := range want {
		f := fs.Lookup(name)
		if assert.NotNil(t, f, "flag --%s", name) {
			assert.Equal(t, def, f.DefValue, "default of --%s", name)
		}
	}
	// The controller's timer flags are served too.
	assert.NotNil(t, fs.Lookup("ha-recovery-grace"), "the controller's flags are bound")
	require.NoError(t, o.Validate(), "the defaults with $POD_NAMESPACE set are valid")
	assert.True(t, o.leaderElection())
}

// TestValidate lists the settings serve refuses before starting anything.
func TestValidate(t *testing.T) {
	valid := func() Options {
		return Options{
			WebhookPort: 9443, CertMode: CertModeFiles, CertDir: "/certs", CertName: "tls.crt", KeyName: "tls.key",
			CASecretName: "ca", Namespace: "ns", ServiceName: "svc", LogLevel: "info",
			EnableController: true, LeaderElect: true,
		}
	}
	tests := []struct {
		name    string
		modify  func(*Options)
		wantErr string // substring; "" means valid
	}{
		{name: "allow: files mode with leader election", modify: func(*Options) {}},
		{name: "allow: Deployment clusters outside the scope denied", modify: func(o *Options) { o.DeploymentWithoutController = DeploymentCheckDeny }},
		{name: "deny: an unknown --deployment-without-controller", modify: func(o *Options) { o.DeploymentWithoutController = "ignore" },
			wantErr: `--deployment-without-controller "ignore" is not supported`},
		{name: "allow: self-signed mode", modify: func(o *Options) { o.CertMode = CertModeSelfSigned }},
		{name: "allow: webhook only without a namespace in files mode", modify: func(o *Options) {
			o.EnableController, o.Namespace = false, ""
		}},
		{name: "allow: no leader election without a namespace in files mode", modify: func(o *Options) {
			o.LeaderElect, o.Namespace = false, ""
		}},
		{name: "allow: self-signed for an IP address only (dev)", modify: func(o *Options) {
			o.CertMode, o.ServiceName, o.IPAddresses = CertModeSelfSigned, "", []net.IP{net.IPv4(127, 0, 0, 1)}
		}},
		{name: "deny: unknown cert mode", modify: func(o *Options) { o.CertMode = "cert-manager" }, wantErr: `--cert-mode "cert-manager" is not supported`},
		{name: "deny: port 0", modify: func(o *Options) { o.WebhookPort = 0 }, wantErr: "--webhook-port 0 is not a port number"},
		{name: "deny: port above 65535", modify: func(o *Options) { o.WebhookPort = 70000 }, wantErr: "--webhook-port 70000"},
		{name: "deny: files mode without a cert dir", modify: func(o *Options) { o.CertDir = "" }, wantErr: "files mode needs --cert-dir"},
		{name: "deny: self-signed without a namespace", modify: func(o *Options) {
			o.CertMode, o.Namespace, o.EnableController = CertModeSelfSigned, "", false
		}, wantErr: "self-signed mode needs --namespace"},
		{name: "deny: self-signed without a secret name", modify: func(o *Options) {
			o.CertMode, o.CASecretName = CertModeSelfSigned, ""
		}, wantErr: "self-signed mode needs --ca-secret-name"},
		{name: "deny: self-signed without a service name", modify: func(o *Options) {
			o.CertMode, o.ServiceName = CertModeSelfSigned, ""
		}, wantErr: "self-signed mode needs --service-name"},
		{name: "deny: leader election without a namespace", modify: func(o *Options) { o.Namespace = "" }, wantErr: "leader election needs --namespace"},
		{name: "allow: replicas that share the fleet", modify: func(o *Options) { o.ShardFleet, o.LeaderElect = true, false }},
		{name: "deny: sharing the fleet and electing a leader", modify: func(o *Options) { o.ShardFleet = true },
			wantErr: "--shard-fleet shares the clusters among every replica, --leader-elect gives them all to one: pass --leader-elect=false"},
		{name: "deny: sharing the fleet without a namespace", modify: func(o *Options) { o.ShardFleet, o.LeaderElect, o.Namespace = true, false, "" },
			wantErr: "--shard-fleet needs --namespace"},
		{name: "allow: no drain", modify: func(o *Options) { o.ShutdownDrain = 0 }},
		{name: "deny: negative drain", modify: func(o *Options) { o.ShutdownDrain = -time.Second }, wantErr: "--shutdown-drain -1s is negative"},
		{name: "deny: negative audit interval", modify: func(o *Options) { o.AuditInterval = -time.Minute }, wantErr: "--audit-interval -1m0s is negative"},
		{name: "deny: negative connection limit", modify: func(o *Options) { o.MaxConnections = -1 }, wantErr: "--max-connections -1 is negative"},
		{name: "allow: the default body budget (zero)", modify: func(o *Options) { o.MaxBodyBytesInFlight = 0 }},
		{name: "allow: a body budget of one largest request", modify: func(o *Options) { o.MaxBodyBytesInFlight = 7 << 20 }},
		{name: "deny: a body budget below the largest request", modify: func(o *Options) { o.MaxBodyBytesInFlight = 1 << 20 },
			wantErr: "--max-body-bytes-in-flight 1Mi is below the largest request body (7Mi)"},
		{name: "deny: a negative body budget", modify: func(o *Options) { o.MaxBodyBytesInFlight = -1 },
			wantErr: "--max-body-bytes-in-flight -1 is below the largest request body"},
		{name: "deny: unknown log level", modify: func(o *Options) { o.LogLevel = "loud" }, wantErr: `--log-level "loud"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid()
			tt.modify(&o)
			err := o.Validate()
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			if assert.Error(t, err) {
				assert.Contains(t, err.Error(), tt.wantErr)
			}
		})
	}
}

// TestBodyBudgetFlag reads --max-body-bytes-in-flight as a Kubernetes quantity of whole
// bytes, as a container's memory limit is written.
func TestBodyBudgetFlag(t *testing.T) {
	for _, tt := range []struct {
		arg   string
		bytes int64
		err   bool
	}{
		{arg: "64Mi", bytes: 64 << 20},
		{arg: "100M", bytes: 100_000_000},
		{arg: "1Gi", bytes: 1 << 30},
		{arg: "8388608", bytes: 8 << 20},
		{arg: "1.5", err: true},
		{arg: "64MB", err: true},
	} {
		t.Run(tt.arg, func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var o Options
			o.BindFlags(fs)
			err := fs.Parse([]string{"--max-body-bytes-in-flight=" + tt.arg})
			if tt.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.bytes, o.MaxBodyBytesInFlight)
		})
	}
}

// TestLeaderElectionOnlyForTheController: a webhook-only deployment never campaigns, since
// every replica serves.
func TestLeaderElectionOnlyForTheController(t *testing.T) {
	assert.True(t, (&Options{LeaderElect: true, EnableController: true}).leaderElection())
	assert.False(t, (&Options{LeaderElect: true, EnableController: false}).leaderElection())
	assert.False(t, (&Options{LeaderElect: false, EnableController: true}).leaderElection())
}

// TestCacheRestrictedOnlyForTheController: with the controller, the manager caches the kinds
// it owns only for objects with the controller's label; without it nothing is restricted.
func TestCacheRestrictedOnlyForTheController(t *testing.T) {
	assert.Empty(t, (&Options{EnableController: false}).cacheOptions().ByObject)

	by := (&Options{EnableController: true}).cacheOptions().ByObject
	var kinds []string
	for obj, o := range by {
		kinds = append(kinds, fmt.Sprintf("%T", obj))
		require.NotNil(t, o.Label, "%T", obj)
		assert.True(t, o.Label.Matches(labels.Set{"app": "flink", "cluster": "wc"}), "%T: the controller's objects are cached", obj)
		assert.False(t, o.Label.Matches(labels.Set{"app": "wc", "configmap-type": "high-availability"}), "%T: other objects are not", obj)
	}
	assert.ElementsMatch(t, []string{"*v1.Pod", "*v1.ConfigMap", "*v1.Service", "*v1.Job", "*v1.Deployment", "*v1.StatefulSet",
		"*v1.Ingress", "*v1.PodDisruptionBudget", "*v2.HorizontalPodAutoscaler"}, kinds)
}

func TestParseLogLevel(t *testing.T) {
	tests := []struct {
		in      string
		want    zapcore.Level
		wantErr bool
	}{
		{in: "info", want: zapcore.InfoLevel},
		{in: "INFO", want: zapcore.InfoLevel},
		{in: "error", want: zapcore.ErrorLevel},
		{in: "debug", want: zapcore.DebugLevel},
		{in: "0", want: zapcore.InfoLevel},
		{in: "4", want: zapcore.Level(-4)},
		{in: "-1", wantErr: true},
		{in: "128", wantErr: true},
		{in: "verbose", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseLogLevel(tt.in)
		if tt.wantErr {
			assert.Error(t, err, tt.in)
			continue
		}
		if assert.NoError(t, err, tt.in) {
			assert.Equal(t, tt.want, got, tt.in)
		}
	}
}

// A kubeconfig given by path gets no client-side rate limit, like every source
// controller-runtime finds itself: client-go's default of 5 requests/s throttled the
// controller of `serve --kubeconfig` behind hundreds of clusters.
func TestKubeconfigPathHasNoClientSideRateLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600))
	cfg, err := LoadConfig(path)
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:6443", cfg.Host)
	assert.Equal(t, float32(-1), cfg.QPS)
}
