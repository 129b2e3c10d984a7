//go:build conformance

package differential_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
	"github.com/flink-admission/flink-admission/internal/test/realflink"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
)

// deliberate are the divergences the fake keeps on purpose, by step and observation, with
// the reason (fakeflink's package documentation lists them too).
var deliberate = map[string]string{}

// scenario is a script run on one side; it returns what a later scenario needs of it.
type scenario struct {
	name string
	run  func(s *side, prev *result) *result
}

// result is what a scenario leaves for the next: the stop's savepoint.
type result struct {
	savepoint   string
	savepointID int64
}

var scenarios = []scenario{
	{"stateful", stateful},
	{"restore", restore},
	{"finite", finite},
	{"throwing", throwing},
}

// TestFakeFollowsRealFlink runs every scenario against real Flink and the fake and fails on
// every divergence of what the controller reads that the fake does not document as
// deliberate.
func TestFakeFollowsRealFlink(t *testing.T) {
	recordedRun := map[string][]observation{}
	prev := map[string]*result{}
	// One directory per side for every scenario: the restore scenario reads the stateful
	// one's savepoint; each cluster's HA data is under its own cluster ID.
	dirs := map[string]string{}
	for _, kind := range []string{real, fake} {
		dir, err := os.MkdirTemp("", "differential-"+kind+"-")
		if err != nil {
			t.Fatal(err)
		}
		dirs[kind] = dir
		if os.Getenv("DIFFERENTIAL_KEEP") == "" {
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
		}
	}
	only := map[string]bool{}
	for _, name := range strings.Split(os.Getenv("DIFFERENTIAL_SCENARIOS"), ",") {
		if name = strings.TrimSpace(name); name != "" {
			only[name] = true
		}
	}
	for _, sc := range scenarios {
		if len(only) > 0 && !only[sc.name] {
			continue
		}
		obs := map[string]*[]observation{real: {}, fake: {}}
		t.Run(sc.name, func(t *testing.T) {
			for _, kind := range []string{real, fake} {
				if kind == real && recorded != nil {
					*obs[real] = recorded[sc.name]
					continue
				}
				start := time.Now()
				s := newSide(t, sc.name, kind, dirs[kind], obs[kind])
				if res := sc.run(s, prev[kind]); res != nil {
					prev[kind] = res
				}
				s.close()
				if kind == real {
					// The real side ran to its end: its record replaces an earlier one.
					recordedRun[sc.name] = *obs[real]
				}
				t.Logf("%s side of %s: %d observations in %s", kind, sc.name, len(*obs[kind]), time.Since(start).Round(time.Second))
			}
			c := compare(*obs[real], *obs[fake], deliberate)
			for _, l := range c.info {
				t.Log("timing-dependent, not compared: " + l)
			}
			for _, l := range c.deliberate {
				t.Log("deliberate divergence: " + l)
			}
			for _, l := range c.diffs {
				t.Error("divergence: " + l)
			}
		})
	}
	if recorded == nil && len(recordedRun) > 0 {
		// The scenarios that ran to their end replace their earlier record.
		path := filepath.Join(testenv.RepoRoot(), ".conformance", "differential-"+version+".json")
		if earlier, err := readObservations(path); err == nil {
			for name, obs := range earlier {
				if _, ok := recordedRun[name]; !ok {
					recordedRun[name] = obs
				}
			}
		}
		b, _ := json.MarshalIndent(recordedRun, "", "  ")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
			if err := os.WriteFile(path, b, 0o644); err == nil {
				t.Logf("the real side's observations are in %s (DIFFERENTIAL_REAL=%s replays them)", path, path)
			}
		}
	}
}

// savepointDir is where the script's savepoints go, as the controller asks Flink to put them.
func (s *side) savepointDir() string { return "file://" + filepath.Join(s.dir, "savepoints") }

// stateful runs the counting job: started, checkpointed, a savepoint, a savepoint of a job
// Flink does not know, a stop-with-savepoint, then the cluster's shutdown.
func stateful(s *side, _ *result) *result {
	s.deploy("job", deploySpec{class: realflink.CountingJob, args: []string{"--report", filepath.Join(s.dir, "report.jsonl")},
		program: fakeflink.Program{JobName: "Counting"}})
	job := "/jobs/" + s.jobID

	s.step = "start"
	seen := s.waitState(is(flinkclient.JobStateRunning))
	s.info("states seen", strings.Join(seen, ","))
	s.note("state", seen[len(seen)-1])
	s.note("overview fields", shape(s.get("/jobs/overview"), overviewSchema))
	s.note("job fields", shape(s.get(job), jobSchema))
	s.note("exceptions fields", shape(s.get(job+"/exceptions"), exceptionsSchema))
	s.note("HA ConfigMaps", s.haNames())

	s.step = "checkpoints"
	cps := s.waitCheckpoint(0)
	_, first := completed(cps)
	cps = s.waitCheckpoint(first)
	s.note("fields", shape(cps, checkpointsSchema))
	latest := field(field(cps, "latest"), "completed")
	s.note("latest completed path", field(latest, "external_path"))
	s.note("latest completed is a savepoint", field(latest, "is_savepoint"))
	s.note("latest restored", field(field(cps, "latest"), "restored"))
	s.note("HA ConfigMaps", s.haConfigMaps())

	_, before := completed(cps)

	s.step = "savepoint"
	code, trig, st := s.operation(s.jobID, "savepoints", map[string]any{"target-directory": s.savepointDir(), "cancel-job": false})
	s.note("trigger status", code)
	s.note("trigger fields", shape(trig, triggerSchema))
	s.note("result fields", shape(st, operationSchema))
	location, _ := field(field(st, "operation"), "location").(string)
	s.note("location", location)
	cps = s.statistics(location)
	sp := field(field(cps, "latest"), "savepoint")
	s.note("latest savepoint is the location", field(sp, "external_path") == location)
	s.note("latest savepoint is a savepoint", field(sp, "is_savepoint"))
	s.note("savepoint ID after the checkpoints' before it", num(field(sp, "id")) > before)
	s.note("HA ConfigMaps", s.haNames())

	s.step = "savepoint of an unknown job"
	code, trig, st = s.operation(flinkclient.NewID(), "savepoints", map[string]any{"target-directory": s.savepointDir(), "cancel-job": false})
	s.note("trigger status", code)
	s.note("trigger fields", shape(trig, triggerSchema))
	s.note("result fields", shape(st, operationSchema))
	s.note("failure class", field(field(field(st, "operation"), "failure-cause"), "class"))
	s.info("failure", firstLine(field(field(field(st, "operation"), "failure-cause"), "stack-trace")))

	s.step = "stop-with-savepoint"
	code, trig, st = s.operation(s.jobID, "stop", map[string]any{"targetDirectory": s.savepointDir(), "drain": false})
	s.note("trigger status", code)
	s.note("result fields", shape(st, operationSchema))
	stop, _ := field(field(st, "operation"), "location").(string)
	s.note("location", stop)
	seen = s.waitState(flinkclient.IsTerminalJobState)
	s.info("states seen", strings.Join(seen, ","))
	s.note("state", seen[len(seen)-1])
	cps = s.statistics(stop)
	sp = field(field(cps, "latest"), "savepoint")
	s.note("latest savepoint is the stop's", field(sp, "external_path") == stop)
	s.note("HA ConfigMaps after the job's end", s.settledHA())
	s.note("overview fields", shape(s.get("/jobs/overview"), overviewSchema))

	shutdown(s)
	return &result{savepoint: stop, savepointID: num(field(sp, "id"))}
}

// statistics reads the job's checkpoint statistics once they list the savepoint at
// location: Flink serves them from a cache (rest.cache.checkpoint-statistics.timeout, by
// default web.refresh-interval, 3 s), so an answer right after a savepoint may not list it
// yet. Whether the first answer did is noted, not compared.
func (s *side) statistics(location string) any {
	cps := s.checkpoints()
	fresh := field(field(field(cps, "latest"), "savepoint"), "external_path") == location
	s.info("the first answer after the savepoint lists it", fresh)
	waitFor(s.ctx, 15*time.Second, func() bool {
		cps = s.checkpoints()
		return field(field(field(cps, "latest"), "savepoint"), "external_path") == location
	})
	return cps
}

// shutdown is the controller's end of a Job-mode JobManager: DELETE /cluster, then the exit.
func shutdown(s *side) {
	s.step = "DELETE /cluster"
	code, _, err := s.call(http.MethodDelete, "/cluster", nil)
	if err != nil {
		s.note("answer", err.Error())
	} else {
		s.note("answer", code)
	}
	exit := exitOf(s, time.Minute)
	if exit == "0" || strings.HasPrefix(exit, "still running") {
		// Flink 2.2.1's JobManager may never exit once asked to after its job ended (the
		// job's HA cleanup is scheduled on an executor its shutdown already stopped); the
		// fake always exits. Both are "0 or never" to the controller, which bounds the wait.
		s.info("exit", exit)
		exit = "0, or never"
	}
	s.note("exit", exit)
	s.note("HA ConfigMaps", s.settledHA())
}

// exitOf is the JobManager's exit code, or "running" when it has not exited within timeout.
func exitOf(s *side, timeout time.Duration) string {
	code, msg, ok := s.exit(timeout)
	if !ok {
		return fmt.Sprintf("still running after %s", timeout)
	}
	s.info("termination message", lastLines(msg, 3))
	return fmt.Sprint(code)
}

// restore starts the counting job from the stateful scenario's stop-with-savepoint, then
// deletes its HA ConfigMaps behind it: first the job's (checkpoints and savepoints need its
// ID counter), then the cluster's (the leader's election record).
func restore(s *side, prev *result) *result {
	if prev == nil || prev.savepoint == "" {
		s.t.Skip("the stateful scenario left no savepoint")
	}
	s.deploy("restored", deploySpec{class: realflink.CountingJob, args: []string{"--report", filepath.Join(s.dir, "report-restored.jsonl")},
		fromSavepoint: prev.savepoint, program: fakeflink.Program{JobName: "Counting"}})
	clusterID := resources.HAClusterID(s.fc)

	s.step = "start from a savepoint"
	seen := s.waitState(is(flinkclient.JobStateRunning))
	s.info("states seen", strings.Join(seen, ","))
	cps := s.checkpoints()
	restored := field(field(cps, "latest"), "restored")
	s.note("restored fields", shape(restored, restoredSchema))
	s.note("restored path", field(restored, "external_path"))
	s.note("restored is a savepoint", field(restored, "is_savepoint"))
	s.note("restored ID is the savepoint's", num(field(restored, "id")) == prev.savepointID)
	s.note("counts.restored", field(field(cps, "counts"), "restored"))
	cps = s.waitCheckpoint(0)
	_, id := completed(cps)
	s.note("first checkpoint ID after the savepoint's", id > prev.savepointID)
	s.note("HA ConfigMaps", s.haNames())

	s.step = "job ConfigMap deleted"
	before := field(cps, "counts")
	s.deleteConfigMap(flinkha.JobConfigMapName(clusterID, s.jobID))
	time.Sleep(4 * checkpointInterval)
	cps = s.checkpoints()
	after := field(cps, "counts")
	s.info("counts before and after", []string{s.norm.value(before), s.norm.value(after)})
	s.note("checkpoints completed since", num(field(after, "completed")) > num(field(before, "completed"))+1)
	s.note("checkpoints failed since", num(field(after, "failed")) > num(field(before, "failed")))
	s.note("state", s.jobState())
	s.note("HA ConfigMaps", s.haNames())

	s.step = "savepoint without the job's ConfigMap"
	code, _, st := s.operation(s.jobID, "savepoints", map[string]any{"target-directory": s.savepointDir(), "cancel-job": false})
	s.note("trigger status", code)
	s.note("result fields", shape(st, operationSchema))
	s.note("failure class", field(field(field(st, "operation"), "failure-cause"), "class"))
	s.info("failure", firstLine(field(field(field(st, "operation"), "failure-cause"), "stack-trace")))
	s.note("state", s.jobState())

	s.step = "stop without the job's ConfigMap"
	code, _, st = s.operation(s.jobID, "stop", map[string]any{"targetDirectory": s.savepointDir(), "drain": false})
	s.note("trigger status", code)
	s.note("result fields", shape(st, operationSchema))
	s.note("failure class", field(field(field(st, "operation"), "failure-cause"), "class"))
	s.info("failure", firstLine(field(field(field(st, "operation"), "failure-cause"), "stack-trace")))
	time.Sleep(2 * time.Second)
	s.note("state", s.jobState())
	s.note("HA ConfigMaps", s.haNames())

	s.step = "cluster ConfigMap deleted"
	s.deleteConfigMap(flinkha.ClusterConfigMapName(clusterID))
	s.note("exit", exitOf(s, 90*time.Second))
	s.note("HA ConfigMaps", s.settledHA())
	return nil
}

// finite runs the bounded job to its end, then shuts the cluster down.
func finite(s *side, _ *result) *result {
	s.deploy("finite", deploySpec{class: realflink.FiniteJob, program: fakeflink.Program{JobName: "Finite"}})
	s.step = "run to the end"
	if s.fake != nil {
		// The fake's job runs until told: it finishes once seen running, as the bounded job does.
		waitFor(s.ctx, waitFlink, func() bool {
			p := s.fakeLeader()
			return p != nil && p.JobState(s.jobID) == flinkclient.JobStateRunning
		})
		s.fakeLeader().SetJobState(s.jobID, flinkclient.JobStateFinished)
	}
	seen := s.waitState(flinkclient.IsTerminalJobState)
	s.info("states seen", strings.Join(seen, ","))
	s.note("state", seen[len(seen)-1])
	s.note("overview fields", shape(s.get("/jobs/overview"), overviewSchema))
	s.note("HA ConfigMaps after the job's end", s.settledHA())
	s.note("exit before any shutdown", exitOf(s, 5*time.Second))
	shutdown(s)
	return nil
}

// throwing runs a main() that throws before it submits a job.
func throwing(s *side, _ *result) *result {
	s.deploy("throwing", deploySpec{class: realflink.ThrowingMainJob,
		program: fakeflink.Program{Throw: "java.lang.IllegalArgumentException: ThrowingMain: main() throws before submitting a job"}})
	s.step = "main() throws"
	s.note("exit", exitOf(s, waitFlink))
	s.note("HA ConfigMaps", s.settledHA())
	return nil
}

func firstLine(v any) string {
	s, _ := v.(string)
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
