package deploy_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/internal/devenv"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
	"github.com/flink-admission/flink-admission/policy"
)

// TestWebhookOutage installs the webhook configurations, failing closed, with no webhook
// server behind them, on a real API server: what the policy does not judge goes through, and
// what it judges is refused, in an unlabelled namespace and in one under staged enforcement.
// A label edit of a running Deployment-mode cluster goes through, unless the install has a
// cluster selector (the scoped overlay) and the label is one it reads. The controller's
// finalizer is the controller's own ("flinkclusters.flinkoperator.k8s.io/finalizer"), removed
// by the patch the controller sends.
func TestWebhookOutage(t *testing.T) {
	ctrllog.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{}))
	env, err := testenv.Start(testenv.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, env.Stop()) })
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1beta1.AddToScheme(s))
	c, err := client.New(env.Config, client.Options{Scheme: s})
	require.NoError(t, err)
	ctx := t.Context()

	// dev's configurations call a URL: a loopback port that refuses connections. The
	// installed ones call the Service flink-admission-webhook, which does not exist here.
	devM, devV, err := devenv.WebhookConfigurations("https://" + refusingAddress(t))
	require.NoError(t, err)
	overlay, scopedOverlay := objects(t, selfSigned), objects(t, scoped)
	installs := []struct {
		name       string
		mutating   *admissionregistrationv1.MutatingWebhookConfiguration
		validating *admissionregistrationv1.ValidatingWebhookConfiguration
		// selector says the install's cluster selector reads selectorKey.
		selector bool
	}{
		{"dev", devM, devV, false},
		{"self-signed", one[*admissionregistrationv1.MutatingWebhookConfiguration](t, overlay, webhookConfigName),
			one[*admissionregistrationv1.ValidatingWebhookConfiguration](t, overlay, webhookConfigName), false},
		{"scoped", one[*admissionregistrationv1.MutatingWebhookConfiguration](t, scopedOverlay, webhookConfigName),
			one[*admissionregistrationv1.ValidatingWebhookConfiguration](t, scopedOverlay, webhookConfigName), true},
	}
	for _, in := range installs {
		t.Run(in.name, func(t *testing.T) {
			// An unlabelled namespace, judged by the validating webhook, and one under staged
			// enforcement, judged by the staged one: both fail closed.
			namespaces := []struct{ name, validating string }{
				{"outage-" + in.name, validatingWebhookName},
				{"outage-" + in.name + "-warn", stagedWebhookName},
			}
			for i, n := range namespaces {
				nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n.name}}
				if i == 1 {
					nsObj.Labels = map[string]string{policy.EnforcementLabel: policy.EnforcementWarn}
				}
				require.NoError(t, c.Create(ctx, nsObj))
			}

			// Each install's configurations under their own name and for their own namespaces
			// only, so that no other install's, on their way in or out, is in force there.
			m, v := in.mutating.DeepCopy(), in.validating.DeepCopy()
			m.Name, v.Name = webhookConfigName+"-"+in.name, webhookConfigName+"-"+in.name
			require.Len(t, m.Webhooks, 1)
			require.Len(t, v.Webhooks, 2)
			for _, sel := range []*metav1.LabelSelector{m.Webhooks[0].NamespaceSelector, v.Webhooks[0].NamespaceSelector, v.Webhooks[1].NamespaceSelector} {
				sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{
					Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: []string{namespaces[0].name, namespaces[1].name}})
			}

			type clusters struct{ jobCluster, deployment *v1beta1.FlinkCluster }
			created := make([]clusters, len(namespaces))
			for i, n := range namespaces {
				jobCluster := builder.MakeFlinkCluster("wordcount", n.name).Label("team", "a").Obj()
				controllerutil.AddFinalizer(jobCluster, finalizer)
				deployment := builder.MakeFlinkCluster("deployment", n.name).Label("team", "a").Label(selectorKey, "flink-admission").
					DeploymentType(v1beta1.JobManagerDeploymentTypeDeployment).HA().Obj()
				// Created while the webhooks are up (here: not installed); its job runs.
				require.NoError(t, c.Create(ctx, jobCluster))
				require.NoError(t, c.Create(ctx, deployment))
				deployment.Status = builder.MakeFlinkCluster("deployment", n.name).JobStatus(v1beta1.JobStateRunning).Obj().Status
				require.NoError(t, c.Status().Update(ctx, deployment))
				created[i] = clusters{jobCluster, deployment}
			}
			require.NoError(t, c.Create(ctx, m))
			require.NoError(t, c.Create(ctx, v))
			t.Cleanup(func() {
				assert.NoError(t, c.Delete(context.Background(), m))
				assert.NoError(t, c.Delete(context.Background(), v))
			})

			for i, n := range namespaces {
				ns, jobCluster, deployment := n.name, created[i].jobCluster, created[i].deployment
				t.Run(ns, func(t *testing.T) {
					// The API server serves the new configurations once its informer has them:
					// until a spec change is refused, which must happen.
					specChange := func() error {
						fc := &v1beta1.FlinkCluster{}
						if err := c.Get(ctx, client.ObjectKeyFromObject(jobCluster), fc); err != nil {
							return err
						}
						fc.Spec.Image.Name = "flink:2.2.2"
						return c.Update(ctx, fc, client.DryRunAll)
					}
					require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
						return isWebhookCallFailure(specChange(), mutatingWebhookName), nil
					}), "a spec change was never refused by the unreachable mutating webhook")

					t.Run("a spec change is refused", func(t *testing.T) {
						assertRefusedBy(t, specChange(), mutatingWebhookName)
					})
					t.Run("a create is refused", func(t *testing.T) {
						assertRefusedBy(t, c.Create(ctx, builder.MakeFlinkCluster("new", ns).Obj()), mutatingWebhookName)
					})
					t.Run("a user-control annotation is refused", func(t *testing.T) {
						assertRefusedBy(t, patchCluster(ctx, c, jobCluster, func(fc *v1beta1.FlinkCluster) {
							metav1.SetMetaDataAnnotation(&fc.ObjectMeta, v1beta1.ControlAnnotation, v1beta1.ControlNameSavepoint)
						}), n.validating)
					})
					if in.selector {
						t.Run("a change of a label of the cluster selector of a running Deployment-mode cluster is refused", func(t *testing.T) {
							assertRefusedBy(t, patchCluster(ctx, c, deployment, func(fc *v1beta1.FlinkCluster) {
								metav1.SetMetaDataLabel(&fc.ObjectMeta, selectorKey, "operator")
							}), n.validating)
						})
					}
					t.Run("a label edit of a running Deployment-mode cluster is accepted", func(t *testing.T) {
						require.NoError(t, patchCluster(ctx, c, deployment, func(fc *v1beta1.FlinkCluster) {
							metav1.SetMetaDataLabel(&fc.ObjectMeta, "team", "b")
							metav1.SetMetaDataLabel(&fc.ObjectMeta, "argocd.argoproj.io/instance", "flink")
						}))
						fc := &v1beta1.FlinkCluster{}
						require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(deployment), fc))
						assert.Equal(t, "b", fc.Labels["team"])
						assert.Equal(t, v1beta1.JobStateRunning, fc.Status.Components.Job.State, "the cluster runs")
					})
					t.Run("a label edit is accepted", func(t *testing.T) {
						require.NoError(t, patchCluster(ctx, c, jobCluster, func(fc *v1beta1.FlinkCluster) {
							metav1.SetMetaDataLabel(&fc.ObjectMeta, "team", "b")
						}))
						fc := &v1beta1.FlinkCluster{}
						require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(jobCluster), fc))
						assert.Equal(t, "b", fc.Labels["team"])
					})
					t.Run("another annotation is accepted", func(t *testing.T) {
						require.NoError(t, patchCluster(ctx, c, jobCluster, func(fc *v1beta1.FlinkCluster) {
							metav1.SetMetaDataAnnotation(&fc.ObjectMeta, "example.com/owner", "team-a")
						}))
					})
					t.Run("a deleted cluster is gone once the controller removes its finalizer", func(t *testing.T) {
						require.NoError(t, c.Delete(ctx, jobCluster))
						fc := &v1beta1.FlinkCluster{}
						require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(jobCluster), fc))
						require.NotNil(t, fc.DeletionTimestamp, "the finalizer holds the cluster")
						// As controller/finalize.go does it.
						patch := client.MergeFromWithOptions(fc.DeepCopy(), client.MergeFromWithOptimisticLock{})
						controllerutil.RemoveFinalizer(fc, finalizer)
						require.NoError(t, c.Patch(ctx, fc, patch))
						err := c.Get(ctx, client.ObjectKeyFromObject(jobCluster), &v1beta1.FlinkCluster{})
						assert.True(t, apierrors.IsNotFound(err), "the cluster is still there: %v", err)
					})
				})
			}
		})
	}
}

// finalizer is the controller's (controller.Finalizer).
const finalizer = "flinkclusters.flinkoperator.k8s.io/finalizer"

// patchCluster reads the stored cluster, changes it with change and sends the difference as
// a merge patch, as kubectl label and annotate do.
func patchCluster(ctx context.Context, c client.Client, key client.Object, change func(*v1beta1.FlinkCluster)) error {
	fc := &v1beta1.FlinkCluster{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(key), fc); err != nil {
		return err
	}
	patch := client.MergeFrom(fc.DeepCopy())
	change(fc)
	return c.Patch(ctx, fc, patch)
}

// isWebhookCallFailure reports whether err is the API server's refusal for want of an answer
// from the named webhook (failurePolicy Fail).
func isWebhookCallFailure(err error, webhook string) bool {
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) {
		return false
	}
	return apierrors.IsInternalError(err) && strings.Contains(status.Status().Message, `"`+webhook+`"`)
}

func assertRefusedBy(t *testing.T, err error, webhook string) {
	t.Helper()
	require.Error(t, err, "accepted although the %s webhook is unreachable", webhook)
	assert.True(t, isWebhookCallFailure(err, webhook), "want a failed call of %s, got: %v", webhook, err)
	t.Log(err)
}

// refusingAddress returns a loopback address that refuses connections: a port bound and
// never listened on, so that no other process can take it during the test.
func refusingAddress(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Close(fd) })
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	port := sa.(*syscall.SockaddrInet4).Port
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
