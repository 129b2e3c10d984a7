package resources_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

// Issue 17 hole 7: before Flink 2.3 the application entrypoint overwrites the configuration
// file's execution.savepoint.ignore-unclaimed-state with the command line's (false when the
// command line names no savepoint), so in Job mode the deploy's savepoint and
// --allowNonRestoredState go on the command line too; in the configuration the option is set
// for every version (2.3 reads it from there).
func TestAllowNonRestoredStateSurvivesTheEntrypoint(t *testing.T) {
	const sp = "s3://b/sp-1"
	restore := []string{"--fromSavepoint", sp, "--allowNonRestoredState"}
	cases := []struct {
		name        string
		mode        v1beta1.JobManagerDeploymentType
		version     string
		allow       bool
		commandLine bool
	}{
		{"Job mode, Flink 1.20: on the command line", v1beta1.JobManagerDeploymentTypeJob, "1.20", true, true},
		{"Job mode, Flink 2.2.1: on the command line", v1beta1.JobManagerDeploymentTypeJob, "2.2.1", true, true},
		{"Job mode, Flink 2.3.0: the configuration file survives", v1beta1.JobManagerDeploymentTypeJob, "2.3.0", true, false},
		{"Job mode without allowNonRestoredState: not on the command line", v1beta1.JobManagerDeploymentTypeJob, "2.2.1", false, false},
		{"Deployment mode: never in the long-lived pod template", v1beta1.JobManagerDeploymentTypeDeployment, "2.2.1", true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fc := builder.MakeAppCluster("wc").DeploymentType(tc.mode).FlinkVersion(tc.version).Obj()
			fc.Spec.Job.AllowNonRestoredState = ptr.To(tc.allow)
			d := resources.Deploy{Revision: "wc-r", JobID: "0123456789abcdef0123456789abcdef", FromSavepoint: sp}
			args := resources.JobManagerPodTemplate(fc, d).Spec.Containers[0].Args
			if tc.commandLine {
				assert.Subset(t, args, restore)
				i := slices.Index(args, "--fromSavepoint")
				assert.Equal(t, restore, args[i:i+3], "the savepoint and the flag together, before the job's arguments")
			} else {
				assert.NotContains(t, args, "--fromSavepoint")
				assert.NotContains(t, args, "--allowNonRestoredState")
			}
			conf := resources.FlinkConfiguration(fc, d)
			assert.Equal(t, sp, conf[resources.KeySavepointPath])
			if tc.allow {
				assert.Equal(t, "true", conf[resources.KeyIgnoreUnclaimedState], "in the configuration for every version")
			} else {
				assert.NotContains(t, conf, resources.KeyIgnoreUnclaimedState)
			}
			ran := d
			ran.FromSavepoint = ""
			assert.NotContains(t, resources.JobManagerPodTemplate(fc, ran).Spec.Containers[0].Args, "--fromSavepoint", "a deploy without a savepoint names none")
		})
	}
}
