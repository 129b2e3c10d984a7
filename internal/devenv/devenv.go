// Package devenv is the local setup of `flink-admission dev` and the end-to-end tests: a
// kube-apiserver and etcd (envtest), the FlinkCluster CRD, and both webhook configurations
// pointing at an in-process server in self-signed mode. With DevOptions.ControlPlane it runs
// the rest of a cluster too (kube-controller-manager, kube-scheduler and KWOK nodes, see
// testenv.StartControlPlane), so that the controller's JobManager pods are created, scheduled
// and run; with DevOptions.SimulateFlink a simulated Flink JobManager answers for each running
// JobManager pod. Everything it installs is embedded (package deploy), so it runs from any
// directory.
//
// It links envtest: only the dev build of the binary (-tags dev) and tests import it.
package devenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/deploy"
	"github.com/flink-admission/flink-admission/internal/freeport"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
	"github.com/flink-admission/flink-admission/policy"
	"github.com/flink-admission/flink-admission/server"
)

// The local setup mirrors an installation of deploy/overlays/self-signed: the same
// namespace, CA Secret and webhook configuration names.
const (
	// DevNamespace holds the CA Secret, as flink-admission-system does in a cluster (the
	// webhooks' namespaceSelector leaves it out, like a real installation).
	DevNamespace = "flink-admission-system"
	// DevCASecretName is the Secret of the local CA.
	DevCASecretName = "flink-admission-ca"
	// DevSampleNamespace is where the readiness probe and the printed commands create
	// FlinkClusters.
	DevSampleNamespace = "default"
	// DefaultDevReadyTimeout bounds how long StartDev waits for the API server to reach the
	// webhooks once everything runs.
	DefaultDevReadyTimeout = 2 * time.Minute
	// DefaultDevNodes is how many KWOK nodes the control plane has: enough to see a
	// JobManager move to another node when its node goes away.
	DefaultDevNodes = 3
	// DevServiceAccount is the service account the samples' pods run as; dev creates it in
	// DevSampleNamespace, as the samples' instructions tell a user to (without it, no
	// JobManager pod is admitted).
	DevServiceAccount = "flink"
)

// DevOptions configure StartDev.
type DevOptions struct {
	// KubeconfigOut is the path the admin kubeconfig is copied to once everything is ready
	// (its directory is created); StartDev's caller learns the path from Dev.Kubeconfig. Empty
	// keeps only testenv's temporary copy.
	KubeconfigOut string
	// WebhookPort is the port of the webhook server on 127.0.0.1; 0 picks a free one.
	WebhookPort int
	// MetricsBindAddress and HealthProbeBindAddress are as in server.Options; a port 0 is resolved to
	// a free port first, so that Dev can tell where they are.
	MetricsBindAddress, HealthProbeBindAddress string
	// LogLevel is as in server.Options.
	LogLevel string
	// ControlPlane runs kube-controller-manager, kube-scheduler and Nodes KWOK nodes beside
	// the API server, so that workloads get pods and pods run (off: the API server and etcd
	// only, which is all the webhooks need).
	ControlPlane bool
	// Nodes is how many KWOK nodes ControlPlane starts (DefaultDevNodes when zero).
	Nodes int
	// EnableController runs the controller.
	EnableController bool
	// SimulateFlink attaches a simulated Flink JobManager (package flinksim) to every running
	// JobManager pod, and points the controller's Flink REST client at it, in process. It
	// needs ControlPlane (without nodes no pod runs).
	SimulateFlink bool
	// RealFlink runs real Flink instead (RealFlink: a JVM per JobManager and TaskManager
	// pod, Flink's jars from Maven Central); it needs ControlPlane, Java 17 and Maven, and
	// excludes SimulateFlink.
	RealFlink bool
	// Controller configures the controller.
	Controller controller.Options
	// AuditInterval is as in server.Options; zero (the default) audits nothing.
	AuditInterval time.Duration
	// Log is the logger of the server; when zero, a console logger at LogLevel writing to
	// Progress becomes the global logger.
	Log logr.Logger
	// Progress receives what StartDev is doing (a cold first run builds kube-apiserver for
	// minutes); os.Stderr when nil.
	Progress io.Writer
	// ReadyTimeout bounds the wait for the webhooks (DefaultDevReadyTimeout when zero).
	ReadyTimeout time.Duration
}

// Dev is a running local setup: kube-apiserver and etcd, the CRD, both webhook
// configurations pointing at an in-process server in self-signed mode, and that server.
type Dev struct {
	// Env is the API server and etcd.
	Env *testenv.Env
	// ControlPlane is the whole control plane (Env, kube-controller-manager, kube-scheduler,
	// the KWOK nodes) with DevOptions.ControlPlane; nil without.
	ControlPlane *testenv.ControlPlane
	// Kubeconfig is the admin kubeconfig for kubectl (DevOptions.KubeconfigOut when set).
	Kubeconfig string
	// WebhookURL is where the API server calls the webhooks (https://127.0.0.1:<port>).
	WebhookURL string
	// MetricsURL and HealthURL are the metrics and health endpoints ("" when turned off).
	MetricsURL, HealthURL string
	// Server is the running server; Server.Source is a *certs.SelfSignedSource.
	Server *server.Server
	// Nodes is how many KWOK nodes run (0 without DevOptions.ControlPlane).
	Nodes int
	// Simulation is the simulated Flink with DevOptions.SimulateFlink; nil without.
	Simulation *Simulation
	// Real is real Flink with DevOptions.RealFlink; nil without.
	Real *RealFlink
	// LogDir holds the logs of kube-controller-manager, kube-scheduler and the KWOK nodes when
	// they run and DevOptions.KubeconfigOut is set ("" otherwise); it is kept after Stop.
	LogDir string

	// samplesDir holds deploy/samples, written out for the printed kubectl commands.
	samplesDir string
	// clusterSelector is the controller's --cluster-selector ("" without the controller):
	// InstallWebhooks writes it into the validating webhooks' match conditions.
	clusterSelector string

	kubeconfigOut string
	cancel        context.CancelFunc
	done          chan struct{}
	runErr        error
}

// Sample returns the path of a copy of one of deploy/samples (e.g. "deployment-mode.yaml"),
// written next to the kubeconfig and removed on Stop.
func (d *Dev) Sample(name string) string {
	return filepath.Join(d.samplesDir, name)
}

// Done is closed when the server stops, on Stop or on a failure (see Err).
func (d *Dev) Done() <-chan struct{} { return d.done }

// Err is the server's error once Done is closed.
func (d *Dev) Err() error {
	select {
	case <-d.done:
		return d.runErr
	default:
		return nil
	}
}

// StartDev starts the local setup and returns once the API server admits a FlinkCluster
// through both webhooks. Cancelling ctx aborts the start. The caller must call Stop.
func StartDev(ctx context.Context, o DevOptions) (dev *Dev, err error) {
	progress := o.Progress
	if progress == nil {
		progress = os.Stderr
	}
	log := o.Log
	if log.GetSink() == nil {
		level, err := server.ParseLogLevel(o.LogLevel)
		if err != nil {
			return nil, err
		}
		log = server.NewConsoleLogger(level, progress)
		server.SetGlobalLogger(log)
	}
	timeout := o.ReadyTimeout
	if timeout == 0 {
		timeout = DefaultDevReadyTimeout
	}

	if os.Getenv("KUBEBUILDER_ASSETS") == "" && !envtestBinariesCached() {
		fmt.Fprintf(progress, "First run: building kube-apiserver and etcd from source (Go module proxy), the local control plane\n"+
			"the tests use too. They are cached under %s, so only this first run takes\n"+
			"~10-15 minutes; progress follows.\n", displayPath(cacheRoot()))
	}
	assets, err := testenv.AssetsDir()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d := &Dev{done: make(chan struct{}), clusterSelector: clusterSelector(o)}
	defer func() {
		if err != nil {
			err = errors.Join(err, d.Stop())
			dev = nil
		}
	}()
	if o.ControlPlane {
		if err := d.startControlPlane(ctx, o, progress); err != nil {
			return d, err
		}
	} else {
		fmt.Fprintf(progress, "starting kube-apiserver and etcd (%s)\n", displayPath(assets))
		if d.Env, err = testenv.Start(testenv.Options{}); err != nil {
			return nil, err
		}
	}
	env := d.Env
	d.Kubeconfig = env.Kubeconfig
	samplesParent := filepath.Dir(env.Kubeconfig)
	if o.KubeconfigOut != "" {
		samplesParent = filepath.Dir(o.KubeconfigOut)
	}
	if d.samplesDir, err = writeSamples(filepath.Join(samplesParent, "samples")); err != nil {
		return d, err
	}

	port := o.WebhookPort
	if port == 0 {
		if port, err = freeport.Get(); err != nil {
			return d, err
		}
	}
	d.WebhookURL = "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	metrics, err := ResolvePort(o.MetricsBindAddress)
	if err != nil {
		return d, fmt.Errorf("metrics address: %w", err)
	}
	health, err := ResolvePort(o.HealthProbeBindAddress)
	if err != nil {
		return d, fmt.Errorf("health probe address: %w", err)
	}
	d.MetricsURL, d.HealthURL = HTTPURL(metrics), HTTPURL(health)

	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return d, err
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: DevNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return d, fmt.Errorf("creating namespace %s: %w", DevNamespace, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DevServiceAccount, Namespace: DevSampleNamespace}}
	if _, err := cs.CoreV1().ServiceAccounts(DevSampleNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return d, fmt.Errorf("creating the service account %s/%s of the samples: %w", DevSampleNamespace, DevServiceAccount, err)
	}
	mutating, validating, err := d.InstallWebhooks(ctx)
	if err != nil {
		return d, err
	}

	ctrl := o.Controller
	if o.RealFlink {
		if d.ControlPlane == nil || o.SimulateFlink {
			return d, errors.New("real Flink needs the control plane (DevOptions.ControlPlane) and excludes the simulated one")
		}
		// Flink's file:// paths are absolute.
		state, err := filepath.Abs(filepath.Join(samplesParent, "flink"))
		if err != nil {
			return d, err
		}
		if d.Real, err = NewRealFlink(env.Config, filepath.Join(state, "jvm"), progress, log); err != nil {
			return d, fmt.Errorf("real Flink: %w", err)
		}
		if err := realSample(d.Sample("deployment-mode.yaml"), filepath.Join(state, "statemachine")); err != nil {
			return d, err
		}
		if err := createFlinkRole(ctx, cs); err != nil {
			return d, err
		}
		ctrl.FlinkClientFor = d.Real.FlinkClientFor
	}
	if o.SimulateFlink {
		if d.ControlPlane == nil {
			return d, errors.New("the simulated Flink needs the control plane (DevOptions.ControlPlane): without nodes no JobManager pod runs")
		}
		if d.Simulation, err = NewSimulation(env.Config, log); err != nil {
			return d, fmt.Errorf("the simulated Flink: %w", err)
		}
		ctrl.FlinkClientFor = d.Simulation.FlinkClientFor
	}
	srv, err := server.New(server.Options{
		WebhookHost:                    "127.0.0.1",
		WebhookPort:                    port,
		CertMode:                       server.CertModeSelfSigned,
		CASecretName:                   DevCASecretName,
		Namespace:                      DevNamespace,
		IPAddresses:                    []net.IP{net.IPv4(127, 0, 0, 1)},
		MutatingWebhookConfiguration:   mutating,
		ValidatingWebhookConfiguration: validating,
		MetricsBindAddress:             metrics,
		HealthProbeBindAddress:         health,
		LogLevel:                       o.LogLevel,
		EnableController:               o.EnableController,
		Controller:                     ctrl,
		AuditInterval:                  o.AuditInterval,
		Config:                         env.Config,
		Log:                            log,
	})
	if err != nil {
		return d, err
	}
	d.Server = srv
	if d.Simulation != nil {
		if err := srv.Manager.Add(d.Simulation); err != nil {
			return d, err
		}
	}
	if d.Real != nil {
		if err := srv.Manager.Add(d.Real); err != nil {
			return d, err
		}
	}
	runCtx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	go func() {
		defer close(d.done)
		d.runErr = srv.Manager.Start(runCtx)
	}()

	if err := d.WaitReady(ctx, timeout); err != nil {
		return d, err
	}
	if o.KubeconfigOut != "" {
		if err := copyKubeconfig(env.Kubeconfig, o.KubeconfigOut); err != nil {
			return d, err
		}
		d.kubeconfigOut, d.Kubeconfig = o.KubeconfigOut, o.KubeconfigOut
	}
	return d, nil
}

// InstallWebhooks creates (or replaces) both webhook configurations, those of deploy/base
// pointed at the local server, with the controller's cluster selector, and returns their
// names. The self-signed source injects the CA bundle as soon as they appear.
func (d *Dev) InstallWebhooks(ctx context.Context) (mutatingName, validatingName string, err error) {
	mutating, validating, err := webhookConfigurationsWith(d.WebhookURL, d.clusterSelector)
	if err != nil {
		return "", "", err
	}
	cs, err := kubernetes.NewForConfig(d.Env.Config)
	if err != nil {
		return "", "", err
	}
	mapi := cs.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if err := mapi.Delete(ctx, mutating.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return "", "", err
	}
	if _, err := mapi.Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		return "", "", fmt.Errorf("creating MutatingWebhookConfiguration %s: %w", mutating.Name, err)
	}
	vapi := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if err := vapi.Delete(ctx, validating.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return "", "", err
	}
	if _, err := vapi.Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		return "", "", fmt.Errorf("creating ValidatingWebhookConfiguration %s: %w", validating.Name, err)
	}
	return mutating.Name, validating.Name, nil
}

// WaitReady waits until the API server calls both webhooks and trusts their certificate:
// deploy/samples/deployment-mode.yaml, created as a dry run, comes back with the shutdown
// default that only the mutating webhook adds, and the same sample with an invalid
// flinkVersion (a rule only the validating webhook has) is denied at spec.flinkVersion.
// Just "admitted" would not do: before the API server has loaded the webhook
// configurations, it admits without asking anyone.
func (d *Dev) WaitReady(ctx context.Context, timeout time.Duration) error {
	sample, err := d.readSample("deployment-mode.yaml")
	if err != nil {
		return err
	}
	c, err := client.New(d.Env.Config, client.Options{Scheme: d.Server.Manager.GetScheme()})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		err := probeWebhooks(ctx, c, sample)
		if err == nil {
			return nil
		}
		var broken *brokenSample
		if errors.As(err, &broken) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the API server did not reach the webhooks within %s: %w", timeout, err)
		case <-d.done:
			return fmt.Errorf("the server stopped: %w", d.runErr)
		case <-tick.C:
		}
	}
}

// brokenSample is a probe failure that waiting does not fix: the sample itself is denied.
type brokenSample struct{ err error }

func (b *brokenSample) Error() string {
	return fmt.Sprintf("the sample deployment-mode.yaml is denied, so the printed commands would fail: %v", b.err)
}

// probeWebhooks makes one readiness check (see WaitReady).
func probeWebhooks(ctx context.Context, c client.Client, sample *v1beta1.FlinkCluster) error {
	admitted := sample.DeepCopy()
	if err := c.Create(ctx, admitted, client.DryRunAll); err != nil {
		if retryable(err) {
			return err
		}
		return &brokenSample{err: err}
	}
	if _, ok := admitted.Spec.FlinkProperties[policy.PropertyShutdownOnApplicationFinish]; !ok {
		return errors.New("the mutating webhook was not called yet")
	}
	invalid := sample.DeepCopy()
	invalid.Spec.FlinkVersion = "latest"
	err := c.Create(ctx, invalid, client.DryRunAll)
	switch {
	case err == nil:
		return errors.New("the validating webhook was not called yet")
	case retryable(err):
		return err
	case !hasCause(err, "spec.flinkVersion"):
		return &brokenSample{err: fmt.Errorf("with flinkVersion latest, want a denial at spec.flinkVersion, got: %w", err)}
	}
	return nil
}

// hasCause reports whether err is an API status with a cause at field.
func hasCause(err error, field string) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, c := range status.Status().Details.Causes {
		if c.Field == field {
			return true
		}
	}
	return false
}

// retryable reports whether a dry-run create failed because a webhook (or the API server)
// could not be reached yet, rather than because the object was judged.
func retryable(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true // a transport error: the API server is not reachable (yet)
	}
	return apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) ||
		apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err)
}

func (d *Dev) readSample(name string) (*v1beta1.FlinkCluster, error) {
	raw, err := deploy.Sample(name)
	if err != nil {
		return nil, err
	}
	fc := &v1beta1.FlinkCluster{}
	if err := yaml.Unmarshal(raw, fc); err != nil {
		return nil, fmt.Errorf("decoding the sample %s: %w", name, err)
	}
	fc.Namespace = DevSampleNamespace
	return fc, nil
}

// Stop stops the server, then the control plane (the KWOK nodes, kube-scheduler,
// kube-controller-manager, kube-apiserver and etcd), and removes the kubeconfig written
// to DevOptions.KubeconfigOut (it is useless once the API server is gone), the samples and
// testenv's temporary files. It is safe to call more than once.
func (d *Dev) Stop() error {
	var errs []error
	if d.cancel != nil {
		d.cancel()
		<-d.done
		d.cancel = nil
		if d.runErr != nil {
			errs = append(errs, fmt.Errorf("server: %w", d.runErr))
		}
	}
	switch {
	case d.ControlPlane != nil:
		if err := d.ControlPlane.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping the control plane: %w", err))
		}
		d.ControlPlane, d.Env = nil, nil
	case d.Env != nil:
		if err := d.Env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping kube-apiserver and etcd: %w", err))
		}
		d.Env = nil
	}
	if d.kubeconfigOut != "" {
		if err := os.Remove(d.kubeconfigOut); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
		d.kubeconfigOut = ""
	}
	if d.samplesDir != "" {
		if err := os.RemoveAll(d.samplesDir); err != nil {
			errs = append(errs, err)
		}
		d.samplesDir = ""
	}
	return errors.Join(errs...)
}

// writeSamples writes the embedded deploy/samples into dir, for the printed commands.
func writeSamples(dir string) (string, error) {
	samples, err := fs.Sub(deploy.Files(), "samples")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return "", err
	}
	if err := os.RemoveAll(dir); err != nil { // a leftover of a killed run
		return "", err
	}
	if err := os.CopyFS(dir, samples); err != nil {
		return "", fmt.Errorf("writing the samples to %s: %w", dir, err)
	}
	return dir, nil
}

// copyKubeconfig writes the kubeconfig (client keys inside: owner-only) to dst.
func copyKubeconfig(src, dst string) error {
	raw, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// cacheRoot is where hack/envtest-binaries.sh caches the binaries (the same lookup).
func cacheRoot() string {
	if dir := os.Getenv("FLINK_ADMISSION_CACHE"); dir != "" {
		return dir
	}
	if dir := os.Getenv("XDG_CACHE_HOME"); dir != "" {
		return filepath.Join(dir, "flink-admission")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "flink-admission")
}

// envtestBinariesCached reports whether some version of kube-apiserver and etcd has been
// built already. When the script needs another version, it says so itself.
func envtestBinariesCached() bool {
	dirs, _ := filepath.Glob(filepath.Join(cacheRoot(), "envtest", "*"))
	for _, dir := range dirs {
		if isExecutable(filepath.Join(dir, "kube-apiserver")) && isExecutable(filepath.Join(dir, "etcd")) {
			return true
		}
	}
	return false
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// displayPath shortens a path under the home directory to ~/....
func displayPath(path string) string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return path
	}
	if rel, err := filepath.Rel(home, path); err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return filepath.Join("~", rel)
	}
	return path
}
