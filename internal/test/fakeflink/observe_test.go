package fakeflink_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// notes is an Observer that writes down what it is told.
type notes struct{ lines []string }

func (n *notes) ExecutionStarted(p *fakeflink.JobManager, e fakeflink.Execution) {
	n.lines = append(n.lines, fmt.Sprintf("start %s %s recovered=%v from=%q", p.Name(), e.JobID[:6], e.Recovered, e.RestoredFrom))
}

func (n *notes) ExecutionEnded(p *fakeflink.JobManager, e fakeflink.Execution) {
	n.lines = append(n.lines, fmt.Sprintf("end %s %s %s", p.Name(), e.JobID[:6], e.State))
}

func (n *notes) SavepointCompleted(p *fakeflink.JobManager, jobID, location string, stop bool) {
	n.lines = append(n.lines, fmt.Sprintf("savepoint %s %s stop=%v at %s", p.Name(), jobID[:6], stop, location[strings.LastIndex(location, "/")+1:][:16]))
}

// An in-process cluster opens no socket, is reached through HTTPClient, and tells its
// Observer about executions and savepoints as they happen: here a stop-with-savepoint, then
// (with delete-on-commit=true, Flink's default) a restarted JobManager that runs main() again
// for the ended job (FLINK-27569).
func TestInProcessClusterTellsItsObserver(t *testing.T) {
	n := &notes{}
	c := newCluster(t, fakeflink.Options{InProcess: true, Observer: n})
	assert.Contains(t, c.URL(), ".invalid", "no Service listens")
	jm := c.Start(fakeflink.Config{Name: "jm-a", Properties: haProps(), FromSavepoint: "s3://sp/initial", Address: "http://10.0.0.1:8081"})
	assert.Contains(t, jm.URL(), ".invalid", "no process listens")
	jm.SetSavepointMode(fakeflink.SavepointHold)

	fc, err := flinkclient.New(c.URL(), c.HTTPClient())
	require.NoError(t, err)
	ctx := context.Background()
	_, err = fc.StopWithSavepoint(ctx, jobID, flinkclient.SavepointRequest{TriggerID: triggerID})
	require.NoError(t, err)
	st, err := fc.SavepointStatus(ctx, jobID, triggerID)
	require.NoError(t, err)
	assert.Equal(t, flinkclient.OperationInProgress, st.State, "held until the test completes it")
	jm.CompleteSavepoints()

	jm.Kill()
	c.Advance(20 * time.Second) // the lease runs out
	c.Start(fakeflink.Config{Name: "jm-b", Properties: haProps(), Address: "http://10.0.0.2:8081"})

	assert.Equal(t, []string{
		`start jm-a 0a1b2c recovered=false from="s3://sp/initial"`,
		"savepoint jm-a 0a1b2c stop=true at savepoint-0a1b2c",
		"end jm-a 0a1b2c FINISHED",
		`start jm-b 0a1b2c recovered=false from=""`,
	}, n.lines)
	assert.NotEmpty(t, c.Violations(), "the fake itself also records the rerun")
}

// A process's own Program replaces the cluster's: a container started from another pod
// template.
func TestProcessProgram(t *testing.T) {
	c := newCluster(t, fakeflink.Options{InProcess: true})
	jm := c.Start(fakeflink.Config{Properties: haProps(fakeflink.PropSubmitFailedJob, "true"),
		Program: &fakeflink.Program{Throw: "java.lang.IllegalArgumentException: bad arg"}})
	assert.Equal(t, flinkclient.JobStateFailed, jm.JobState(jobID), "the application driver's job")
	ok := c.Start(fakeflink.Config{Properties: haProps(fakeflink.PropJobID, "ffffffffffffffffffffffffffffffff")})
	jm.Kill()
	c.Advance(20 * time.Second)
	assert.Equal(t, flinkclient.JobStateRunning, ok.JobState("ffffffffffffffffffffffffffffffff"), "the cluster's program submits the job")
}
