package deploy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
	"github.com/flink-admission/flink-admission/policy"
)

// TestSamplesPassThePolicy runs the samples through what the webhooks run: validation as it
// comes (validation does not assume the mutating webhook ran), then defaulting and validation
// again. The CRD's own rules are checked by TestApplyDryRunServer on the real API server.
func TestSamplesPassThePolicy(t *testing.T) {
	for _, c := range []struct {
		file           string
		deploymentType v1beta1.JobManagerDeploymentType
	}{
		{"job-mode.yaml", v1beta1.JobManagerDeploymentTypeJob},
		{"deployment-mode.yaml", v1beta1.JobManagerDeploymentTypeDeployment},
	} {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("samples", c.file))
			require.NoError(t, err)
			fc := &v1beta1.FlinkCluster{}
			require.NoError(t, yaml.UnmarshalStrict(data, fc))
			require.Equal(t, v1beta1.GroupVersion.String(), fc.APIVersion)
			require.Equal(t, "FlinkCluster", fc.Kind)
			require.Empty(t, fc.Namespace, "samples go to the namespace they are applied to")
			fc.Namespace = "default" // as the API server sets it before admission

			assert.True(t, fc.Spec.IsApplicationMode(), "an application-mode cluster")
			assert.Equal(t, c.deploymentType, fc.Spec.GetDeploymentType())

			errs, warnings := policy.ValidateCreate(fc)
			assert.Empty(t, errs, "as written")
			assert.Empty(t, warnings, "as written")

			defaulted := fc.DeepCopy()
			policy.Default(defaulted)
			errs, warnings = policy.ValidateCreate(defaulted)
			assert.Empty(t, errs, "defaulted")
			assert.Empty(t, warnings, "defaulted")

			if c.deploymentType != v1beta1.JobManagerDeploymentTypeDeployment {
				return
			}
			// What the sample's header promises for a Deployment JobManager.
			props := fc.Spec.FlinkProperties
			assert.True(t, flinkcluster.HAEnabled(props), "Flink HA on")
			assert.Equal(t, "kubernetes", flinkcluster.HAType(props))
			assert.NotEmpty(t, props["high-availability.storageDir"])
			require.NotNil(t, fc.Spec.Job.SavepointsDir)
			assert.NotEmpty(t, *fc.Spec.Job.SavepointsDir)
			assert.Equal(t, "false", defaulted.Spec.FlinkProperties["execution.shutdown-on-application-finish"],
				"the mutating webhook keeps the JobManager up after the job ends")
			assert.NotNil(t, defaulted.Spec.JobManager.TerminationGracePeriodSeconds, "grace period defaulted")
			assert.NotNil(t, defaulted.Spec.JobManager.PreStopDelaySeconds, "preStop delay defaulted")
		})
	}
}
