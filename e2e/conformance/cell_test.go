//go:build conformance

package conformance_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/internal/test/realflink"
)

// Modes are the deployment types every scenario runs in.
var modes = []v1beta1.JobManagerDeploymentType{v1beta1.JobManagerDeploymentTypeDeployment, v1beta1.JobManagerDeploymentTypeJob}

// waitLong bounds a wait for what real Flink does: a JVM start on a busy machine, a
// recovery from HA, a savepoint.
const waitLong = 4 * time.Minute

// cell is one scenario run on one Flink version in one deployment type.
type cell struct {
	t       *testing.T
	version string
	mode    v1beta1.JobManagerDeploymentType
	ns      string
	// dir holds the job's report, its checkpoints, savepoints and HA data.
	dir string
	// detail is the reason of the cell's failure, for the table.
	detail string
}

// newCell makes the cell's namespace with the service account and Role Flink's Kubernetes HA
// needs (deploy/samples' instructions).
func newCell(t *testing.T, id, version string, mode v1beta1.JobManagerDeploymentType) *cell {
	ns := strings.ToLower(fmt.Sprintf("conf-%s-%s-%s", id, mode, strings.ReplaceAll(version, ".", "")))
	dir, err := os.MkdirTemp("", "conformance-"+ns+"-")
	if err != nil {
		t.Fatal(err)
	}
	c := &cell{t: t, version: version, mode: mode, ns: ns, dir: dir}
	t.Cleanup(func() {
		c.remove()
		if os.Getenv("CONFORMANCE_KEEP") == "" {
			_ = os.RemoveAll(dir)
		}
	})
	ctx := context.Background()
	objs := realflink.NamespaceObjects(ns)
	for _, o := range objs {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	return c
}

// remove deletes the cell's namespace and waits (bounded) until none of its pods is left, so
// that its JVMs make room for the next cell's under the launcher's cap.
func (c *cell) remove() {
	ctx := context.Background()
	_ = k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}})
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		pods := &corev1.PodList{}
		if err := k8s.List(ctx, pods, client.InNamespace(c.ns)); err == nil && len(pods.Items) == 0 {
			return
		}
		time.Sleep(time.Second)
	}
	c.t.Logf("pods of namespace %s still there 2 minutes after its deletion", c.ns)
}

// fatalf fails the cell with a reason the table shows.
func (c *cell) fatalf(format string, args ...any) {
	c.t.Helper()
	if c.detail == "" {
		c.detail = fmt.Sprintf(format, args...)
	}
	c.t.Fatalf(format, args...)
}

// cluster is the cell's FlinkCluster "job" running the test job class with args: HA with its
// storage in the cell's directory, checkpoints every 2 s, one TaskManager with two slots,
// parallelism 2, small JVMs.
func (c *cell) cluster(class string, args ...string) *builder.FlinkClusterWrapper {
	return builder.MakeFlinkCluster("job", c.ns).
		Image("flink:"+c.version).FlinkVersion(c.version).
		DeploymentType(c.mode).
		Spec(func(s *v1beta1.FlinkClusterSpec) { s.ServiceAccountName = ptr.To("flink") }).
		JobManager(func(jm *v1beta1.JobManagerSpec) { jm.Replicas = ptr.To[int32](1) }).
		TaskManager(func(tm *v1beta1.TaskManagerSpec) { tm.Replicas = ptr.To[int32](1) }).
		Job(func(j *v1beta1.JobSpec) {
			j.JarFile = ptr.To(realflink.JobsJarInImage)
			j.ClassName = ptr.To(class)
			j.SavepointsDir = ptr.To("file://" + filepath.Join(c.dir, "savepoints"))
			j.Args = args
			j.RestartPolicy = ptr.To(v1beta1.JobRestartPolicyNever)
		}).
		Parallelism(2).
		PreStop(3).Grace(30).
		FlinkProperty("high-availability.type", "kubernetes").
		FlinkProperty("high-availability.storageDir", "file://"+filepath.Join(c.dir, "ha")).
		FlinkProperty("execution.checkpointing.interval", "2s").
		FlinkProperty("execution.checkpointing.dir", "file://"+filepath.Join(c.dir, "checkpoints")).
		FlinkProperty("execution.shutdown-on-application-finish", "false").
		FlinkProperty("taskmanager.numberOfTaskSlots", "2").
		FlinkProperty("jobmanager.memory.process.size", "768m").
		FlinkProperty("taskmanager.memory.process.size", "1024m").
		FlinkProperty("restart-strategy.type", "fixed-delay").
		FlinkProperty("restart-strategy.fixed-delay.attempts", "2").
		FlinkProperty("restart-strategy.fixed-delay.delay", "1s")
}

// counting is the cluster of the stateful test job, reporting to the cell's report file.
func (c *cell) counting(extra ...string) *builder.FlinkClusterWrapper {
	return c.cluster(realflink.CountingJob, append([]string{"--report", c.reportPath(), "--fail-file", c.failFile()}, extra...)...)
}

func (c *cell) reportPath() string { return filepath.Join(c.dir, "report.jsonl") }
func (c *cell) failFile() string   { return filepath.Join(c.dir, "fail") }

func (c *cell) create(fc *v1beta1.FlinkCluster) {
	c.t.Helper()
	if err := k8s.Create(context.Background(), fc); err != nil {
		c.fatalf("creating the FlinkCluster: %v", err)
	}
}

func (c *cell) get() *v1beta1.FlinkCluster {
	c.t.Helper()
	fc := &v1beta1.FlinkCluster{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: c.ns, Name: "job"}, fc); err != nil {
		c.fatalf("reading the FlinkCluster: %v", err)
	}
	return fc
}

func jobOf(fc *v1beta1.FlinkCluster) v1beta1.JobStatus {
	if fc.Status.Components.Job == nil {
		return v1beta1.JobStatus{}
	}
	return *fc.Status.Components.Job
}

// eventually waits for cond, polling, up to timeout; then the cell fails with what and the
// cluster's state.
func (c *cell) eventually(what string, timeout time.Duration, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			fc := c.get()
			j := jobOf(fc)
			c.fatalf("waited %s for %s: cluster %s, job %s (id %s), reason %q", timeout, what, fc.Status.State, j.State, j.ID, j.FailureReasons)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitJob waits for the job's state and returns the cluster then.
func (c *cell) waitJob(state string) *v1beta1.FlinkCluster {
	c.t.Helper()
	var fc *v1beta1.FlinkCluster
	c.eventually("job "+state, waitLong, func() bool { fc = c.get(); return jobOf(fc).State == state })
	return fc
}

// flink is a REST client of the cell's JobManager Service.
func (c *cell) flink() flinkclient.Client {
	c.t.Helper()
	cl, err := (&realflink.ServiceTransport{Reader: k8s}).FlinkClient(c.get())
	if err != nil {
		c.fatalf("flink client: %v", err)
	}
	return cl
}

// completedCheckpoint is the newest checkpoint Flink completed for job, 0 when none (or the
// REST API does not answer now).
func (c *cell) completedCheckpoint(jobID string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cps, err := c.flink().GetCheckpoints(ctx, jobID)
	if err != nil || cps.Latest.Completed == nil {
		return 0
	}
	return cps.Latest.Completed.ID
}

// waitCheckpoint waits for a completed checkpoint newer than after and returns its ID.
func (c *cell) waitCheckpoint(jobID string, after int64) int64 {
	c.t.Helper()
	var id int64
	c.eventually(fmt.Sprintf("a checkpoint after %d", after), waitLong, func() bool { id = c.completedCheckpoint(jobID); return id > after })
	return id
}

// jmPods are the cluster's JobManager pods.
func (c *cell) jmPods() []corev1.Pod {
	c.t.Helper()
	return c.componentPods(resources.ComponentJobManager)
}

// componentPods are the cluster's pods of a component (resources.LabelComponent).
func (c *cell) componentPods(component string) []corev1.Pod {
	c.t.Helper()
	pods := &corev1.PodList{}
	if err := k8s.List(context.Background(), pods, client.InNamespace(c.ns), client.MatchingLabels{resources.LabelComponent: component}); err != nil {
		c.fatalf("listing %s pods: %v", component, err)
	}
	return pods.Items
}

// report is what the test job wrote: its starts and snapshots.
type report struct {
	starts    []reportLine
	snapshots []reportLine
}

type reportLine struct {
	Event                string `json:"event"`
	Subtask              int    `json:"subtask"`
	RestoredCheckpointID int64  `json:"restoredCheckpointId"`
	RestoredCount        int64  `json:"restoredCount"`
	Attempt              int    `json:"attempt"`
	CheckpointID         int64  `json:"checkpointId"`
	Count                int64  `json:"count"`
	// line is the line's number in the report.
	line int
}

func (c *cell) report() report {
	c.t.Helper()
	var r report
	f, err := os.Open(c.reportPath())
	if os.IsNotExist(err) {
		return r
	}
	if err != nil {
		c.fatalf("reading the job's report: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 0; sc.Scan(); n++ {
		l := reportLine{line: n}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			continue // a line being written
		}
		switch l.Event {
		case "start":
			r.starts = append(r.starts, l)
		case "snapshot":
			r.snapshots = append(r.snapshots, l)
		}
	}
	return r
}

// snapshotCount is what subtask snapshotted at checkpoint id, and whether it did.
func (r report) snapshotCount(subtask int, id int64) (int64, bool) {
	for _, s := range r.snapshots {
		if s.Subtask == subtask && s.CheckpointID == id {
			return s.Count, true
		}
	}
	return 0, false
}

// restoredExactly checks the starts after the first n: every subtask restored checkpoint (or
// savepoint) id with exactly the count it snapshotted there: nothing rewound, nothing lost.
func (c *cell) restoredExactly(n int, id int64) {
	c.t.Helper()
	c.eventually("the job's subtasks to start again", waitLong, func() bool { return len(c.report().starts) >= n+2 })
	r := c.report()
	for _, s := range r.starts[n:] {
		if s.RestoredCheckpointID != id {
			c.fatalf("subtask %d restored checkpoint %d, want %d (the job's state was rewound or lost)", s.Subtask, s.RestoredCheckpointID, id)
		}
		want, ok := r.snapshotCount(s.Subtask, id)
		if !ok {
			c.fatalf("subtask %d restored checkpoint %d, which it never snapshotted", s.Subtask, id)
		}
		if s.RestoredCount != want {
			c.fatalf("subtask %d restored count %d from checkpoint %d, which held %d", s.Subtask, s.RestoredCount, id, want)
		}
	}
}
