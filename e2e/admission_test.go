package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/policy"
)

// badCluster breaks three rules that only the policy (the validating webhook) knows — the
// CRD's schema and CEL rules accept it — and uses a deprecated field that draws a warning.
const badCluster = `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: bad
spec:
  flinkVersion: latest
  batchSchedulerName: volcano
  image:
    name: flink:1.20.1
  jobManager:
    ports:
      ui: 80
    resources:
      limits:
        cpu: "1"
  taskManager:
    replicas: 2
    resources:
      requests:
        cpu: 500m
        memory: 2Gi
  job:
    mode: Application
    jarFile: /opt/flink/examples/streaming/WordCount.jar
    parallelism: 2
`

// TestCreateDeniedWithEveryFieldPath: kubectl prints every field error of a denied create
// (the webhook answers with structured causes), and the warning.
func TestCreateDeniedWithEveryFieldPath(t *testing.T) {
	ns := newNamespace(t, nil)
	r := kubectl(t, "apply", "-n", ns, "-f", writeManifest(t, "bad.yaml", badCluster))

	require.Equal(t, 1, r.exitCode, "the create is denied")
	assert.Contains(t, r.stderr, `The FlinkCluster "bad" is invalid`)
	for _, want := range []string{
		`spec.flinkVersion: Invalid value: "latest"`,
		`spec.jobManager.ports.ui: Invalid value: 80`,
		`spec.jobManager.resources.requests[memory]: Required value`,
	} {
		assert.Contains(t, r.stderr, want, "each field path is printed")
	}
	assert.Contains(t, r.stderr, "Warning: "+policy.WarningBatchSchedulerName, "the warning is printed")

	get := kubectl(t, "get", "-n", ns, "flinkcluster", "bad")
	assert.Equal(t, 1, get.exitCode)
	assert.Contains(t, get.stderr, "NotFound", "nothing is stored")
}

// TestWarningOnAdmittedCreate: an admitted create still prints the webhook's warnings.
func TestWarningOnAdmittedCreate(t *testing.T) {
	ns := newNamespace(t, nil)
	fc := readSample(t, "job-mode.yaml")
	fc.Spec.BatchSchedulerName = ptrTo("volcano")
	raw, err := yaml.Marshal(fc)
	require.NoError(t, err)

	r := kubectl(t, "apply", "-n", ns, "-f", writeManifest(t, "warned.yaml", string(raw)))
	require.Equal(t, 0, r.exitCode, "admitted")
	assert.Contains(t, r.stdout, "flinkcluster.flinkoperator.k8s.io/wordcount created")
	assert.Contains(t, r.stderr, "Warning: "+policy.WarningBatchSchedulerName)
}

// TestDryRunShowsDefaultsAndStoresNothing: `kubectl apply --dry-run=server -o yaml` shows
// what the mutating webhook adds, and nothing is stored.
func TestDryRunShowsDefaultsAndStoresNothing(t *testing.T) {
	ns := newNamespace(t, nil)
	r := kubectl(t, "apply", "--dry-run=server", "-o", "yaml", "-n", ns, "-f", sample("deployment-mode.yaml"))
	require.Equal(t, 0, r.exitCode)

	out := &v1beta1.FlinkCluster{}
	require.NoError(t, yaml.Unmarshal([]byte(r.stdout), out), "kubectl prints the admitted object")
	props := out.Spec.FlinkProperties
	assert.Equal(t, "false", props[policy.PropertyShutdownOnApplicationFinish])
	assert.Equal(t, "true", props["execution.submit-failed-job-on-application-error"])
	require.NotNil(t, out.Spec.JobManager)
	assert.Equal(t, ptrTo(policy.DefaultPreStopDelaySeconds), out.Spec.JobManager.PreStopDelaySeconds)
	assert.Equal(t, ptrTo(policy.DefaultTerminationGracePeriodSeconds), out.Spec.JobManager.TerminationGracePeriodSeconds)
	// The sample sets none of them: they come from the webhook.
	in := readSample(t, "deployment-mode.yaml")
	assert.NotContains(t, in.Spec.FlinkProperties, policy.PropertyShutdownOnApplicationFinish)
	assert.Nil(t, in.Spec.JobManager.PreStopDelaySeconds)
	assert.True(t, strings.Contains(r.stdout, "execution.shutdown-on-application-finish: \"false\""), "printed as YAML")

	get := kubectl(t, "get", "-n", ns, "flinkcluster", in.Name)
	assert.Equal(t, 1, get.exitCode)
	assert.Contains(t, get.stderr, "NotFound", "a dry run stores nothing")
}

func ptrTo[T any](v T) *T { return &v }
