package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/deploy"
	"github.com/flink-admission/flink-admission/internal/test/paritycases"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
	"github.com/flink-admission/flink-admission/policy"
)

// shutdownSettings are what the Deployment-mode defaults set, as stored.
type shutdownSettings struct {
	ShutdownOnFinish, SubmitFailedJob *string
	PreStop                           *int32
	Grace                             *int64
}

func (s shutdownSettings) String() string {
	str := func(p *string) string {
		if p == nil {
			return "<absent>"
		}
		return *p
	}
	num := func(p any) string {
		switch v := p.(type) {
		case *int32:
			if v != nil {
				return fmt.Sprint(*v)
			}
		case *int64:
			if v != nil {
				return fmt.Sprint(*v)
			}
		}
		return "<absent>"
	}
	return fmt.Sprintf("shutdown-on-finish=%s submit-failed-job=%s preStop=%s grace=%s",
		str(s.ShutdownOnFinish), str(s.SubmitFailedJob), num(s.PreStop), num(s.Grace))
}

func shutdownOf(fc *v1beta1.FlinkCluster) shutdownSettings {
	var s shutdownSettings
	if v, ok := fc.Spec.FlinkProperties[policy.PropertyShutdownOnApplicationFinish]; ok {
		s.ShutdownOnFinish = &v
	}
	if v, ok := fc.Spec.FlinkProperties[policy.PropertySubmitFailedJobOnApplicationError]; ok {
		s.SubmitFailedJob = &v
	}
	if jm := fc.Spec.JobManager; jm != nil {
		s.PreStop, s.Grace = jm.PreStopDelaySeconds, jm.TerminationGracePeriodSeconds
	}
	return s
}

// TestAdmissionPolicyInstall installs deploy/overlays/admission-policy — the CRD and the
// MutatingAdmissionPolicy, no webhook server — on a second API server, as a user does
// (kubectl apply -k), and runs every parity case through it and through the webhooks of the
// local setup: the same verdict, and for every admitted case the same stored shutdown
// settings. A deploymentType change stays denied by the CRD.
func TestAdmissionPolicyInstall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env, err := testenv.Start(testenv.Options{WithoutCRD: true})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, env.Stop()) })
	kubectlOn(t, env, "apply", "-k", filepath.Join(testenv.RepoRoot(), "deploy", "overlays", "admission-policy"))
	require.NoError(t, env.WaitEstablished("flinkclusters.flinkoperator.k8s.io", 2*time.Minute))

	scheme := dev.Server.Manager.GetScheme()
	policyClient, err := client.New(env.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	webhookClient, err := client.New(dev.Env.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	waitForPolicy(t, ctx, policyClient)

	etcd := func(e *testenv.Env) *clientv3.Client {
		c, err := clientv3.New(clientv3.Config{
			Endpoints: []string{e.Environment.ControlPlane.Etcd.URL.String()}, DialTimeout: 10 * time.Second, Logger: zap.NewNop(),
		})
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	webhookEtcd, policyEtcd := etcd(dev.Env), etcd(env)

	var admitted, defaulted int
	for _, tc := range paritycases.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			ns := newNamespace(t, nil)
			_, err := policyClientNamespace(ctx, policyClient, ns)
			require.NoError(t, err)

			var viaWebhook, viaPolicy *v1beta1.FlinkCluster
			if tc.Old != nil {
				// The same stored cluster on both sides: stored through the webhooks (or
				// straight into etcd when it breaks a rule), then copied as is.
				viaWebhook = storeOld(t, ctx, webhookClient, webhookEtcd, tc, ns)
				viaPolicy = copyStored(t, ctx, webhookEtcd, policyEtcd, policyClient, viaWebhook)
			}
			wAllowed, wGot := dryRun(t, ctx, webhookClient, tc.New, ns, viaWebhook)
			pAllowed, pGot := dryRun(t, ctx, policyClient, tc.New, ns, viaPolicy)
			require.Equal(t, wAllowed, pAllowed, "verdict: through the webhooks vs through the admission policy")
			require.Equal(t, tc.Allowed, pAllowed, "the table's verdict")
			if pAllowed {
				admitted++
				if pGot.ShutdownOnFinish != nil {
					defaulted++
				}
				assert.Equal(t, wGot.String(), pGot.String(), "stored shutdown settings (webhook vs admission policy)")
			}
		})
	}
	t.Logf("%d parity cases admitted with the same shutdown settings, %d of them with the Deployment-mode settings", admitted, defaulted)
	assert.NotZero(t, defaulted, "no admitted case has the Deployment-mode settings: the comparison proves nothing")

	t.Run("deny: a deploymentType change", func(t *testing.T) {
		ns := "deploymenttype"
		_, err := policyClientNamespace(ctx, policyClient, ns)
		require.NoError(t, err)
		sample, err := deploy.Sample("deployment-mode.yaml")
		require.NoError(t, err)
		file := filepath.Join(t.TempDir(), "deployment-mode.yaml")
		require.NoError(t, os.WriteFile(file, sample, 0o600))
		kubectlOn(t, env, "apply", "-n", ns, "-f", file)
		var fc v1beta1.FlinkCluster
		require.NoError(t, yaml.Unmarshal(sample, &fc))
		res := runCommand(t, env.Kubectl("patch", "-n", ns, "flinkcluster", fc.Name, "--type", "merge",
			"-p", `{"spec":{"jobManager":{"deploymentType":"Job"}}}`), "kubectl patch")
		assert.Equal(t, 1, res.exitCode)
		assert.Contains(t, res.stderr, "spec.jobManager.deploymentType: Forbidden: deploymentType is immutable")
	})
}

func policyClientNamespace(ctx context.Context, c client.Client, name string) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	return ns, nil
}

// waitForPolicy waits until the API server applies the policy: it loads policies
// asynchronously, and before that it admits without defaults.
func waitForPolicy(t *testing.T, ctx context.Context, c client.Client) {
	t.Helper()
	raw, err := deploy.Sample("deployment-mode.yaml")
	require.NoError(t, err)
	var sample v1beta1.FlinkCluster
	require.NoError(t, yaml.Unmarshal(raw, &sample))
	sample.Namespace = "default"
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		fc := sample.DeepCopy()
		err := c.Create(ctx, fc, client.DryRunAll)
		if err == nil && shutdownOf(fc).ShutdownOnFinish != nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the MutatingAdmissionPolicy was not applied within 2 minutes (last error: %v)", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// dryRun creates (or, with stored, updates) obj with a server-side dry run and returns the
// verdict and, when admitted, the shutdown settings that would be stored.
func dryRun(t *testing.T, ctx context.Context, c client.Client, obj *v1beta1.FlinkCluster, ns string, stored *v1beta1.FlinkCluster) (bool, shutdownSettings) {
	t.Helper()
	obj = obj.DeepCopy()
	obj.Namespace = ns
	var err error
	if stored == nil {
		err = c.Create(ctx, obj, client.DryRunAll)
	} else {
		obj.ResourceVersion, obj.UID = stored.ResourceVersion, stored.UID
		err = c.Update(ctx, obj, client.DryRunAll)
	}
	if err != nil {
		var status apierrors.APIStatus
		require.True(t, errors.As(err, &status) && (apierrors.IsInvalid(err) || apierrors.IsForbidden(err)), "not a denial: %v", err)
		return false, shutdownSettings{}
	}
	return true, shutdownOf(obj)
}

// copyStored writes a stored FlinkCluster from one etcd into the other, byte for byte, and
// reads it back from the second API server.
func copyStored(t *testing.T, ctx context.Context, from, to *clientv3.Client, c client.Client, stored *v1beta1.FlinkCluster) *v1beta1.FlinkCluster {
	t.Helper()
	key := path.Join("/registry", v1beta1.GroupVersion.Group, "flinkclusters", stored.Namespace, stored.Name)
	got, err := from.Get(ctx, key)
	require.NoError(t, err)
	require.Len(t, got.Kvs, 1, "the stored cluster in etcd")
	_, err = to.Put(ctx, key, string(got.Kvs[0].Value))
	require.NoError(t, err)
	out := &v1beta1.FlinkCluster{}
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: stored.Namespace, Name: stored.Name}, out))
	return out
}

// kubectlOn runs kubectl against env, failing the test when it fails.
func kubectlOn(t *testing.T, env *testenv.Env, args ...string) result {
	t.Helper()
	res := runCommand(t, env.Kubectl(args...), "kubectl "+strings.Join(args, " "))
	require.Equal(t, 0, res.exitCode, "kubectl %v: %s", args, res.stderr)
	return res
}
