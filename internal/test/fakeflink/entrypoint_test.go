package fakeflink_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

func TestParseApplicationArgsStopsWhereFlink2sParserStops(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want fakeflink.ApplicationArgs
	}{{
		name: "every option known",
		args: []string{"--jars", "/j.jar", "--job-id", "ab", "-Djobmanager.rpc.address=10.0.0.1", "--job-classname", "C", "--fromSavepoint", "s", "--allowNonRestoredState", "--rate", "1"},
		want: fakeflink.ApplicationArgs{JobID: "ab", ClassName: "C", FromSavepoint: "s", AllowNonRestoredState: true, Jars: []string{"/j.jar"},
			Dynamic: map[string]string{"jobmanager.rpc.address": "10.0.0.1"}, ProgramArgs: []string{"--rate", "1"}},
	}, {
		name: "--host is unknown to Flink 2: it and everything after it go to main()",
		args: []string{"--job-id", "ab", "--host", "10.0.0.1", "--job-classname", "C"},
		want: fakeflink.ApplicationArgs{JobID: "ab", ProgramArgs: []string{"--host", "10.0.0.1", "--job-classname", "C"}},
	}, {
		name: "--jars takes the job's arguments that follow it",
		args: []string{"--job-classname", "C", "--jars", "/j.jar", "--report", "/r"},
		want: fakeflink.ApplicationArgs{ClassName: "C", Jars: []string{"/j.jar", "--report", "/r"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, fakeflink.ParseApplicationArgs(tc.args))
		})
	}
}
