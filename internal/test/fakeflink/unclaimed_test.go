package fakeflink_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// StandaloneApplicationClusterEntryPoint and SavepointRestoreSettings.toConfiguration (issue
// 17 hole 7): before Flink 2.3 the entrypoint writes the command line's restore settings over
// the configuration file's, false without --fromSavepoint; 2.3 keeps the file's
// (FLINK-36973). A savepoint with state of an operator the program lacks restores only when
// unclaimed state is ignored (Checkpoints.loadAndValidateCheckpoint).
func TestContractAllowNonRestoredStateThroughTheEntrypoint(t *testing.T) {
	const sp = "s3://b/sp-removed-op"
	cases := []struct {
		name     string
		version  fakeflink.Version
		cfg      fakeflink.Config
		restores bool
	}{
		{"1.20, only the file says true: the entrypoint overwrites it", fakeflink.Version1_20,
			fakeflink.Config{Properties: haProps(fakeflink.PropSavepointPath, sp, fakeflink.PropIgnoreUnclaimed, "true")}, false},
		{"2.2, only the file says true: the entrypoint overwrites it", fakeflink.Version2_2,
			fakeflink.Config{Properties: haProps(fakeflink.PropSavepointPath, sp, fakeflink.PropIgnoreUnclaimed, "true")}, false},
		{"2.3, only the file says true: kept", fakeflink.Version2_3,
			fakeflink.Config{Properties: haProps(fakeflink.PropSavepointPath, sp, fakeflink.PropIgnoreUnclaimed, "true")}, true},
		{"1.20, --fromSavepoint with --allowNonRestoredState", fakeflink.Version1_20,
			fakeflink.Config{Properties: haProps(fakeflink.PropSavepointPath, sp, fakeflink.PropIgnoreUnclaimed, "true"), FromSavepoint: sp, AllowNonRestoredState: true}, true},
		{"2.2, --fromSavepoint without --allowNonRestoredState", fakeflink.Version2_2,
			fakeflink.Config{Properties: haProps(fakeflink.PropSavepointPath, sp, fakeflink.PropIgnoreUnclaimed, "true"), FromSavepoint: sp}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, fakeflink.Options{Version: tc.version})
			c.SetUnclaimedState(sp, "removed-map")
			jm := c.Start(tc.cfg)
			if tc.restores {
				assert.Equal(t, flinkclient.JobStateRunning, jm.JobState(jobID), "the removed operator's state is dropped")
				return
			}
			assert.Equal(t, flinkclient.JobStateFailed, jm.JobState(jobID))
			assert.Empty(t, c.Executions(), "the job never ran")
			got, err := restClient(t, jm.URL()).GetExceptions(context.Background(), jobID)
			require.NoError(t, err)
			require.NotEmpty(t, got)
			assert.Contains(t, got[0].StackTrace, "Cannot map checkpoint/savepoint state for operator removed-map")
		})
	}
}
