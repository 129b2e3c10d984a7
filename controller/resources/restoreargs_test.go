package resources_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

// Before Flink 2.3 the application entrypoint overwrites the configuration
// file's execution.savepoint.ignore-unclaimed-state with the command line's (false when the
// command line names no savepoint), so the deploy's savepoint and --allowNonRestoredState go
// on the command line too: the path itself in Job mode, $(FLINK_ADMISSION_RESTORE_PATH) from
// the ConfigMap in Deployment mode (with HA). In the configuration the option is set for
// every version (2.3 reads it from there).
func TestAllowNonRestoredStateSurvivesTheEntrypoint(t *testing.T) {
	const sp = "s3://b/sp-1"
	const (
		none = iota
		literal
		fromEnv
	)
	job, dep := v1beta1.JobManagerDeploymentTypeJob, v1beta1.JobManagerDeploymentTypeDeployment
	cases := []struct {
		name      string
		mode      v1beta1.JobManagerDeploymentType
		version   string
		ha        bool
		allow     bool
		savepoint string
		want      int
	}{
		{"Job mode, Flink 1.20: the path on the command line", job, "1.20", false, true, sp, literal},
		{"Job mode, Flink 2.2.1: the path on the command line", job, "2.2.1", true, true, sp, literal},
		{"Job mode, Flink 2.3.0: the configuration file survives", job, "2.3.0", false, true, sp, none},
		{"Job mode without allowNonRestoredState: not on the command line", job, "2.2.1", false, false, sp, none},
		{"Job mode without a savepoint: not on the command line", job, "1.20", false, true, "", none},
		{"Deployment mode with HA, Flink 1.20: the path from the ConfigMap", dep, "1.20", true, true, sp, fromEnv},
		{"Deployment mode with HA, Flink 2.2.1: the path from the ConfigMap", dep, "2.2.1", true, true, sp, fromEnv},
		{"Deployment mode, Flink 2.3.0: the configuration file survives", dep, "2.3.0", true, true, sp, none},
		{"Deployment mode without allowNonRestoredState: not on the command line", dep, "2.2.1", true, false, sp, none},
		{"Deployment mode without a savepoint: not on the command line", dep, "2.2.1", true, true, "", none},
		{"Deployment mode without HA: the path is dropped after the run, so not honoured", dep, "2.2.1", false, true, sp, none},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := builder.MakeAppCluster("wc").DeploymentType(tc.mode).FlinkVersion(tc.version)
			if !tc.ha {
				w = w.DeleteFlinkProperty("high-availability.type")
			}
			fc := w.Obj()
			fc.Spec.Job.AllowNonRestoredState = ptr.To(tc.allow)
			d := resources.Deploy{Revision: "wc-r", JobID: "0123456789abcdef0123456789abcdef", FromSavepoint: tc.savepoint}
			c := resources.JobManagerPodTemplate(fc, d).Spec.Containers[0]
			cm, err := resources.ConfigMap(fc, d)
			require.NoError(t, err)
			envIdx := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == resources.EnvRestorePath })
			switch tc.want {
			case none:
				assert.NotContains(t, c.Args, "--fromSavepoint")
				assert.NotContains(t, c.Args, "--allowNonRestoredState")
				assert.Equal(t, -1, envIdx, "no restore path variable")
				if tc.mode == dep && tc.ha && tc.savepoint != "" {
					assert.Equal(t, tc.savepoint, cm.Data[resources.KeyRestorePath], "kept for a JobManager created from an earlier spec")
				} else {
					assert.NotContains(t, cm.Data, resources.KeyRestorePath)
				}
			case literal:
				i := slices.Index(c.Args, "--fromSavepoint")
				require.GreaterOrEqual(t, i, 0)
				assert.Equal(t, []string{"--fromSavepoint", sp, "--allowNonRestoredState"}, c.Args[i:i+3], "the savepoint and the flag together, before the job's arguments")
				assert.Equal(t, -1, envIdx)
			case fromEnv:
				i := slices.Index(c.Args, "--fromSavepoint")
				require.GreaterOrEqual(t, i, 0)
				assert.Equal(t, []string{"--fromSavepoint", "$(" + resources.EnvRestorePath + ")", "--allowNonRestoredState"}, c.Args[i:i+3],
					"the pod template names the variable, never the path")
				require.GreaterOrEqual(t, envIdx, 0)
				ref := c.Env[envIdx].ValueFrom.ConfigMapKeyRef
				require.NotNil(t, ref)
				assert.Equal(t, resources.ConfigMapName(fc.Name), ref.Name)
				assert.Equal(t, resources.KeyRestorePath, ref.Key)
				assert.False(t, ptr.Deref(ref.Optional, false), "a missing key must not start the container with the unexpanded variable")
				assert.Equal(t, sp, cm.Data[resources.KeyRestorePath], "the ConfigMap entry holds the file's path")
			}
			conf := resources.FlinkConfiguration(fc, d)
			assert.Equal(t, tc.savepoint, conf[resources.KeySavepointPath])
			if tc.allow && tc.savepoint != "" {
				assert.Equal(t, "true", conf[resources.KeyIgnoreUnclaimedState], "in the configuration for every version")
			} else {
				assert.NotContains(t, conf, resources.KeyIgnoreUnclaimedState)
			}
		})
	}
}

// The controller replaces the restore path after the job ran without touching the pod
// template: the ConfigMap entry the container's variable reads changes with the file.
func TestReplaceSavepointRewritesTheRestorePathEntry(t *testing.T) {
	fc := builder.MakeAppCluster("wc").DeploymentType(v1beta1.JobManagerDeploymentTypeDeployment).FlinkVersion("1.20").HA().Obj()
	fc.Spec.Job.AllowNonRestoredState = ptr.To(true)
	d := resources.Deploy{Revision: "wc-r", JobID: "0123456789abcdef0123456789abcdef", FromSavepoint: "s3://b/sp-1"}
	cm, err := resources.ConfigMap(fc, d)
	require.NoError(t, err)
	const after = "no-such-savepoint-resume-from-ha"
	changed, err := resources.ReplaceSavepoint(cm, after)
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, after, cm.Data[resources.KeyRestorePath])
	path := resources.Configuration(cm)[resources.KeySavepointPath]
	assert.Equal(t, after, path, "the file and the entry agree")
	changed, err = resources.ReplaceSavepoint(cm, after)
	require.NoError(t, err)
	assert.False(t, changed, "nothing left to change")

	d.FromSavepoint = after
	rebuilt, err := resources.ConfigMap(fc, d)
	require.NoError(t, err)
	assert.Equal(t, cm.Data, rebuilt.Data, "a rebuilt ConfigMap of the deploy after its run is the replaced one")
}
