package deploy_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	admissioncel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/deploy"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/policy"
	"github.com/flink-admission/flink-admission/scope"
)

// matchCase is one request and whether each webhook must be called for it.
type matchCase struct {
	name                 string
	old, obj             *v1beta1.FlinkCluster // old nil: a create
	mutating, validating bool
}

// selectorKey is the label the scoped overlay's cluster selector reads.
const selectorKey = "flink.example.com/controller"

// matchCases: the webhooks see every create and everything the policy judges on an update;
// the rest of an update (labels, other annotations, finalizers, status, the API server's own
// metadata) is not sent, so that it goes through while the webhooks are down. selected says
// whether the install's cluster selector reads selectorKey: only then is a change of that
// label sent, and only on a Deployment-mode Application cluster.
func matchCases(selected bool) []matchCase {
	const finalizer = "flinkclusters.flinkoperator.k8s.io/finalizer"
	jobCluster := builder.MakeFlinkCluster("wordcount", "team-a").JobMode(v1beta1.JobModeDetached).Label("team", "a")
	deployment := builder.MakeFlinkCluster("wordcount", "team-a").DeploymentType(v1beta1.JobManagerDeploymentTypeDeployment).HA().
		Label("team", "a").Label(selectorKey, "flink-admission")
	withFinalizer := func(w *builder.FlinkClusterWrapper) *v1beta1.FlinkCluster {
		fc := w.Obj()
		fc.Finalizers = []string{finalizer}
		return fc
	}
	deleting := withFinalizer(jobCluster)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	finalizerRemoved := deleting.DeepCopy()
	finalizerRemoved.Finalizers = nil
	statusChanged := jobCluster.Clone().JobStatus(v1beta1.JobStateRunning).Obj()
	apiMetadata := jobCluster.Obj()
	apiMetadata.ResourceVersion, apiMetadata.Generation = "42", 3
	apiMetadata.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}}
	noSpec := jobCluster.Obj()
	noSpec.Spec = v1beta1.FlinkClusterSpec{}

	return []matchCase{
		{name: "create", obj: jobCluster.Obj(), mutating: true, validating: true},
		{name: "create of a Deployment-mode cluster", obj: deployment.Obj(), mutating: true, validating: true},
		{name: "spec change", old: jobCluster.Obj(), obj: jobCluster.Clone().Image("flink:2.2.2").Obj(), mutating: true, validating: true},
		{name: "spec change by a default alone", old: jobCluster.Obj(), obj: jobCluster.Clone().RestartPolicy(v1beta1.JobRestartPolicyNever).Obj(),
			mutating: true, validating: true},
		{name: "spec removed", old: jobCluster.Obj(), obj: noSpec, mutating: true, validating: true},
		{name: "no change", old: jobCluster.Obj(), obj: jobCluster.Obj()},
		{name: "label added", old: jobCluster.Obj(), obj: jobCluster.Clone().Label("cost-center", "42").Obj()},
		{name: "label removed", old: jobCluster.Obj(), obj: builder.MakeFlinkCluster("wordcount", "team-a").JobMode(v1beta1.JobModeDetached).Obj()},
		{name: "other annotation added", old: jobCluster.Obj(), obj: jobCluster.Clone().Annotation("example.com/owner", "me").Obj()},
		{name: "finalizer added", old: jobCluster.Obj(), obj: withFinalizer(jobCluster)},
		{name: "finalizer removed from a cluster being deleted", old: deleting, obj: finalizerRemoved},
		{name: "status changed", old: jobCluster.Obj(), obj: statusChanged},
		{name: "the API server's metadata changed", old: jobCluster.Obj(), obj: apiMetadata},
		{name: "user-control added", old: jobCluster.Obj(), obj: jobCluster.Clone().UserControl(v1beta1.ControlNameSavepoint).Obj(), validating: true},
		{name: "user-control added empty", old: jobCluster.Obj(), obj: jobCluster.Clone().UserControl("").Obj(), validating: true},
		{name: "user-control changed", old: jobCluster.Clone().UserControl(v1beta1.ControlNameSavepoint).Obj(),
			obj: jobCluster.Clone().UserControl(v1beta1.ControlNameJobCancel).Obj(), validating: true},
		{name: "user-control kept, other annotation added", old: jobCluster.Clone().UserControl(v1beta1.ControlNameSavepoint).Obj(),
			obj: jobCluster.Clone().UserControl(v1beta1.ControlNameSavepoint).Annotation("example.com/owner", "me").Obj()},
		// The controller removes the annotation when the control is done.
		{name: "user-control removed", old: jobCluster.Clone().UserControl(v1beta1.ControlNameSavepoint).Obj(), obj: jobCluster.Obj()},
		// deployment-without-controller reads the labels of a Deployment-mode Application
		// cluster that the controller's --cluster-selector reads: a change of one of them can
		// take it out of the controller's scope; no other label can.
		{name: "label of the cluster selector changed on a Deployment-mode Application cluster", old: deployment.Obj(),
			obj: deployment.Clone().Label(selectorKey, "operator").Obj(), validating: selected},
		{name: "label of the cluster selector removed from a Deployment-mode Application cluster", old: deployment.Obj(),
			obj: withoutLabel(deployment.Obj(), selectorKey), validating: selected},
		{name: "label of the cluster selector added to a Deployment-mode Application cluster", old: withoutLabel(deployment.Obj(), selectorKey),
			obj: deployment.Obj(), validating: selected},
		{name: "other label changed on a Deployment-mode Application cluster", old: deployment.Obj(),
			obj: deployment.Clone().Label("team", "b").Obj()},
		{name: "other label added to a Deployment-mode Application cluster", old: deployment.Obj(),
			obj: deployment.Clone().Label("argocd.argoproj.io/instance", "flink").Obj()},
		{name: "label of the cluster selector changed on a Deployment-mode Detached cluster", old: deployment.Clone().JobMode(v1beta1.JobModeDetached).Obj(),
			obj: deployment.Clone().JobMode(v1beta1.JobModeDetached).Label(selectorKey, "operator").Obj()},
		{name: "annotation added on a Deployment-mode Application cluster", old: deployment.Obj(),
			obj: deployment.Clone().Annotation("example.com/owner", "me").Obj()},
		{name: "finalizer removed from a Deployment-mode Application cluster", old: withFinalizer(deployment), obj: deployment.Obj()},
		// The confirmation of a state loss is judged with the spec change that throws the state
		// away, which is sent; on its own it redeploys nothing and is not sent.
		{name: "discard-state confirmation added alone", old: jobCluster.Obj(),
			obj: jobCluster.Clone().Annotation(policy.DiscardStateAnnotation, "4f3c0d5e9a8b7c6d5e4f3a2b1c0d9e8f").Obj()},
		{name: "spec change with the discard-state confirmation", old: jobCluster.Obj(),
			obj: jobCluster.Clone().Annotation(policy.DiscardStateAnnotation, "4f3c0d5e9a8b7c6d5e4f3a2b1c0d9e8f").
				Job(func(j *v1beta1.JobSpec) { m := v1beta1.UpgradeModeStateless; j.UpgradeMode = &m }).Obj(),
			mutating: true, validating: true},
	}
}

// withoutLabel returns fc without the label key.
func withoutLabel(fc *v1beta1.FlinkCluster, key string) *v1beta1.FlinkCluster {
	delete(fc.Labels, key)
	return fc
}

// TestWebhooksSendOnlyJudgedChanges evaluates every install's match conditions with the API
// server's own compiler and matcher (its CEL environment, as kube-apiserver builds it).
func TestWebhooksSendOnlyJudgedChanges(t *testing.T) {
	compiler := admissioncel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	for _, k := range append(append([]kustomization(nil), kustomizations...), scoped) {
		objs := objects(t, k)
		selected := k == scoped
		for kind, w := range webhooksOf(t, objs) {
			t.Run(k.name+"/"+kind, func(t *testing.T) {
				matcher := matcherOf(kind, w.view, compiler)
				for _, c := range matchCases(selected) {
					want := map[string]bool{"mutating": c.mutating, "validating": c.validating, "validating-warn": c.validating}[kind]
					res := matcher.Match(context.Background(), versionedAttributes(t, c.old, c.obj), nil, nil)
					require.NoError(t, res.Error, c.name)
					assert.Equal(t, want, res.Matches, "%s: sent to the %s webhook", c.name, kind)
				}
			})
		}
	}
}

// TestWebhooksReadTheControllersClusterSelector: every install writes into the validating
// webhooks' match conditions the selector its controller is given (--cluster-selector, as the
// kubelet expands it), and nothing without a controller or a selector.
func TestWebhooksReadTheControllersClusterSelector(t *testing.T) {
	for _, k := range everything {
		t.Run(k.name, func(t *testing.T) {
			objs := objects(t, k)
			var want string
			if ds := all[*appsv1.Deployment](objs); len(ds) > 0 {
				_, _, flags := workload(t, objs)
				if flags["enable-controller"] == "true" {
					want = flags["cluster-selector"]
				}
			}
			vs := all[*admissionregistrationv1.ValidatingWebhookConfiguration](objs)
			if k == admissionPolicy {
				require.Empty(t, vs, "no webhook")
				return
			}
			require.Len(t, vs, 1)
			for _, w := range vs[0].Webhooks {
				require.Len(t, w.MatchConditions, 1, w.Name)
				got, ok := deploy.ClusterSelector(w.MatchConditions[0].Expression)
				require.True(t, ok, "%s: no place for the cluster selector", w.Name)
				assert.Equal(t, want, got, w.Name)
			}
			if k == scoped {
				assert.Equal(t, "flink.example.com/controller=flink-admission", want)
			}
		})
	}
}

// TestMatchConditionReadsEverySelectorKey: with a selector of every kind of requirement, a
// change of each key it reads is sent to the validating webhook, and of a label that is one of
// its values, or of no requirement, is not.
func TestMatchConditionReadsEverySelectorKey(t *testing.T) {
	compiler := admissioncel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	_, v, err := deploy.WebhookConfigurations()
	require.NoError(t, err)
	const selector = "team in (a, b),!legacy,tier,example.com/env notin (x,y),app=web,zone!=east"
	_, err = scope.ParseSelector(selector)
	require.NoError(t, err)
	require.NoError(t, deploy.SetClusterSelector(v, selector))
	matcher := matcherOf("validating", validatingView(v.Webhooks[0]), compiler)
	deployment := builder.MakeFlinkCluster("wordcount", "team-a").DeploymentType(v1beta1.JobManagerDeploymentTypeDeployment).HA()
	for key, sent := range map[string]bool{
		"team": true, "legacy": true, "tier": true, "example.com/env": true, "app": true, "zone": true,
		"a": false, "b": false, "x": false, "web": false, "east": false, "owner": false, "example.com/team": false,
	} {
		res := matcher.Match(context.Background(), versionedAttributes(t, deployment.Obj(), deployment.Clone().Label(key, "v").Obj()), nil, nil)
		require.NoError(t, res.Error, key)
		assert.Equal(t, sent, res.Matches, "label %s added: sent to the validating webhook", key)
	}
}

// matcherOf compiles a webhook's match conditions as the API server does
// (WebhookAccessor.GetCompiledMatcher).
func matcherOf(kind string, v webhookView, compiler admissioncel.ConditionCompiler) matchconditions.Matcher {
	var a webhook.WebhookAccessor
	if kind == "mutating" {
		a = webhook.NewMutatingWebhookAccessor(kind, webhookConfigName, &admissionregistrationv1.MutatingWebhook{
			Name: v.name, FailurePolicy: v.failurePolicy, MatchConditions: v.matchConditions})
	} else {
		a = webhook.NewValidatingWebhookAccessor(kind, webhookConfigName, &admissionregistrationv1.ValidatingWebhook{
			Name: v.name, FailurePolicy: v.failurePolicy, MatchConditions: v.matchConditions})
	}
	return a.GetCompiledMatcher(compiler)
}

// versionedAttributes is the request the API server matches: the objects as unstructured
// JSON, as it decodes a custom resource; an UPDATE when old is set, else a CREATE.
func versionedAttributes(t *testing.T, old, obj *v1beta1.FlinkCluster) *admission.VersionedAttributes {
	t.Helper()
	toUnstructured := func(fc *v1beta1.FlinkCluster) runtime.Object {
		if fc == nil {
			return nil
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(fc)
		require.NoError(t, err)
		return &unstructured.Unstructured{Object: m}
	}
	op := admission.Create
	if old != nil {
		op = admission.Update
	}
	gvk := v1beta1.GroupVersion.WithKind(v1beta1.Kind)
	attr := admission.NewAttributesRecord(toUnstructured(obj), toUnstructured(old), gvk, obj.Namespace, obj.Name,
		flinkClusters, "", op, nil, false, nil)
	va, err := admission.NewVersionedAttributes(attr, gvk, nil)
	require.NoError(t, err)
	return va
}
