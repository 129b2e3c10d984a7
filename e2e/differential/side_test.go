//go:build conformance

package differential_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
	"github.com/flink-admission/flink-admission/internal/test/flinksim"
	"github.com/flink-admission/flink-admission/internal/test/realflink"
	"github.com/flink-admission/flink-admission/policy"
)

// fakeFiles is the file system of the fake side's clusters: a deploy restores the savepoint
// another took.
var fakeFiles = &fakeflink.FileSystem{}

// The two sides of the comparison.
const (
	real = "real"
	fake = "fake"
)

// checkpointInterval is the clusters' execution.checkpointing.interval.
const checkpointInterval = 2 * time.Second

// waitFlink bounds a wait for what real Flink does on a busy machine: a JVM start, a
// savepoint, a shutdown.
const waitFlink = 3 * time.Minute

// side is one deploy of a scenario on one side: its namespace, objects and Flink, and what
// the script observed of it.
type side struct {
	t    *testing.T
	ctx  context.Context
	kind string
	ns   string
	// dir holds the deploy's checkpoints, savepoints and HA data (a directory per scenario
	// and side, shared by the scenario's deploys).
	dir   string
	fc    *v1beta1.FlinkCluster
	jobID string
	// fake is the fake side's Flink; nil on the real side.
	fake *fakeflink.Cluster
	// stop ends the side's Simulator.
	stop func()
	http *http.Client
	base string
	step string
	obs  *[]observation
	norm *normalizer
}

// deploySpec is what a scenario deploys.
type deploySpec struct {
	class         string
	args          []string
	fromSavepoint string
	// program is what the fake's main() does in place of class.
	program fakeflink.Program
}

// newSide makes the namespace of a scenario's side, with the service account and Role
// Flink's Kubernetes HA needs (deploy/samples' instructions). dir is the side's directory
// (a scenario that restores another's savepoint shares its directory); "" makes one.
func newSide(t *testing.T, scenario, kind, dir string, obs *[]observation) *side {
	ns := "d-" + scenario + "-" + kind
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "differential-"+kind+"-"); err != nil {
			t.Fatal(err)
		}
		if os.Getenv("DIFFERENTIAL_KEEP") == "" {
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
		}
	}
	s := &side{t: t, ctx: context.Background(), kind: kind, ns: ns, dir: dir, obs: obs}
	objs := realflink.NamespaceObjects(ns)
	for _, o := range objs {
		if err := k8s.Create(s.ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	return s
}

// cluster is the FlinkCluster of a deploy: the conformance suite's (HA with its storage in
// the side's directory, checkpoints every checkpointInterval, one TaskManager with two slots,
// small JVMs), its JobManager a batch Job.
func (s *side) cluster(name string, d deploySpec) *v1beta1.FlinkCluster {
	fc := builder.MakeFlinkCluster(name, s.ns).
		Image("flink:"+version).FlinkVersion(version).
		DeploymentType(v1beta1.JobManagerDeploymentTypeJob).
		Spec(func(sp *v1beta1.FlinkClusterSpec) { sp.ServiceAccountName = ptr.To("flink") }).
		JobManager(func(jm *v1beta1.JobManagerSpec) { jm.Replicas = ptr.To[int32](1) }).
		TaskManager(func(tm *v1beta1.TaskManagerSpec) { tm.Replicas = ptr.To[int32](1) }).
		Job(func(j *v1beta1.JobSpec) {
			j.JarFile = ptr.To(realflink.JobsJarInImage)
			j.ClassName = ptr.To(d.class)
			j.SavepointsDir = ptr.To("file://" + filepath.Join(s.dir, "savepoints"))
			j.Args = d.args
			j.RestartPolicy = ptr.To(v1beta1.JobRestartPolicyNever)
		}).
		Parallelism(2).
		PreStop(1).Grace(20).
		FlinkProperty("high-availability.type", "kubernetes").
		FlinkProperty("high-availability.storageDir", "file://"+filepath.Join(s.dir, "ha")).
		FlinkProperty("execution.checkpointing.interval", checkpointInterval.String()).
		FlinkProperty("execution.checkpointing.dir", "file://"+filepath.Join(s.dir, "checkpoints")).
		FlinkProperty("taskmanager.numberOfTaskSlots", "2").
		FlinkProperty("jobmanager.memory.process.size", "768m").
		FlinkProperty("taskmanager.memory.process.size", "1024m").
		FlinkProperty("restart-strategy.type", "fixed-delay").
		FlinkProperty("restart-strategy.fixed-delay.attempts", "2").
		FlinkProperty("restart-strategy.fixed-delay.delay", "1s").
		Obj()
	policy.Default(fc)
	return fc
}

// deploy creates a FlinkCluster named name and the objects the controller would make for
// its first deploy, and starts the side's Flink on its pods: real JVMs, or the fake attached
// by a flinksim.Simulator as make run attaches it.
func (s *side) deploy(name string, d deploySpec) {
	s.t.Helper()
	fc := s.cluster(name, d)
	if err := k8s.Create(s.ctx, fc); err != nil {
		s.t.Fatalf("creating the FlinkCluster: %v", err)
	}
	s.fc = fc
	s.jobID = flinkclient.NewID()
	rev, err := resources.Revision(fc)
	if err != nil {
		s.t.Fatal(err)
	}
	dep := resources.Deploy{Revision: rev, JobID: s.jobID, FromSavepoint: d.fromSavepoint}
	cm, err := resources.ConfigMap(fc, dep)
	if err != nil {
		s.t.Fatal(err)
	}
	objs := []client.Object{cm, resources.Service(fc, rev), resources.JobManagerJob(fc, dep), resources.TaskManagerStatefulSet(fc, rev)}
	for _, o := range objs {
		if err := k8s.Create(s.ctx, o); err != nil {
			s.t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	s.norm = newNormalizer(s.dir, s.ns, s.jobID)

	ctx, cancel := context.WithCancel(context.Background())
	opts := flinksim.Options{Config: cp.Config, Namespace: s.ns, BackOff: time.Second, MaxBackOff: 10 * time.Second}
	if s.kind == real {
		opts.Launcher, opts.TaskManagers = launcher, true
		s.http = &http.Client{Transport: &realflink.ServiceTransport{Reader: k8s}, Timeout: 10 * time.Second}
		s.base = controller.JobManagerURL(fc)
	} else {
		clock := clocktesting.NewFakeClock(time.Now())
		go func() {
			// The fake's clock follows the real one, as make run's does.
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case now := <-tick.C:
					clock.SetTime(now)
				}
			}
		}()
		prog := d.program
		s.fake = fakeflink.NewCluster(fakeflink.Options{
			ClusterID: resources.HAClusterID(fc), Version: fakeVersion(version),
			HA: &fakeflink.KubeHA{Client: k8s, Namespace: s.ns}, Clock: clock, Program: prog,
			FileSystem: fakeFiles, ElectInBackground: true, Driven: true,
		})
		opts.Clusters = func(context.Context, *v1beta1.FlinkCluster) *fakeflink.Cluster { return s.fake }
		s.http = &http.Client{Timeout: 10 * time.Second}
		s.base = s.fake.URL()
	}
	sim, err := flinksim.New(opts)
	if err != nil {
		cancel()
		s.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = sim.Start(ctx); close(done) }()
	s.stop = func() {
		cancel()
		<-done
		if s.fake != nil {
			s.fake.Close()
		}
	}
	s.t.Cleanup(s.close)
}

// close deletes the side's namespace, lets the Simulator end its pods' processes as the
// kubelet would (bounded), then stops it.
func (s *side) close() {
	if s.stop == nil {
		return
	}
	_ = k8s.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}})
	waitFor(context.Background(), 90*time.Second, func() bool {
		pods := &corev1.PodList{}
		return k8s.List(context.Background(), pods, client.InNamespace(s.ns)) == nil && len(pods.Items) == 0
	})
	if s.kind == real {
		// Every JVM of the side gone: the next side's pods may get the same IPs (KWOK).
		waitFor(context.Background(), time.Minute, func() bool { return launcher.Running() == 0 })
	}
	s.stop()
	s.stop = nil
}

// fakeVersion is the fake's version standing in for a Flink release.
func fakeVersion(v string) fakeflink.Version {
	switch {
	case strings.HasPrefix(v, "2.3"):
		return fakeflink.Version2_3
	case strings.HasPrefix(v, "1.20"):
		return fakeflink.Version1_20
	default:
		return fakeflink.Version2_2
	}
}

// note records an observation of the current step, normalized.
func (s *side) note(what string, value any) {
	*s.obs = append(*s.obs, observation{Step: s.step, What: what, Value: s.norm.value(value)})
}

// info records an observation that is printed beside the comparison but not compared: what
// depends on timing (a state seen or missed between two polls).
func (s *side) info(what string, value any) {
	*s.obs = append(*s.obs, observation{Step: s.step, What: what, Value: s.norm.value(value), Info: true})
}

// call makes a REST call and returns its status and decoded body (nil when not JSON).
func (s *side) call(method, path string, body any) (int, any, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(s.ctx, method, s.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var v any
	if json.Unmarshal(raw, &v) != nil {
		v = nil
	}
	return resp.StatusCode, v, nil
}

// get is a GET that must answer 200 within waitFlink (the REST API may not be up yet).
func (s *side) get(path string) any {
	s.t.Helper()
	var out any
	var last string
	ok := waitFor(s.ctx, waitFlink, func() bool {
		code, v, err := s.call(http.MethodGet, path, nil)
		last = fmt.Sprint(code, " ", err)
		out = v
		return err == nil && code == http.StatusOK
	})
	if !ok {
		s.t.Fatalf("%s: GET %s did not answer 200 in %s (last %s)", s.kind, path, waitFlink, last)
	}
	return out
}

// jobState is the job's state in /jobs/overview, or "" when not listed (or no answer).
func (s *side) jobState() string {
	code, v, err := s.call(http.MethodGet, "/jobs/overview", nil)
	if err != nil || code != http.StatusOK {
		return ""
	}
	for _, j := range list(field(v, "jobs")) {
		if field(j, "jid") == s.jobID {
			st, _ := field(j, "state").(string)
			return st
		}
	}
	return ""
}

// waitState polls the job's state until done says so, and returns the states seen, in order.
func (s *side) waitState(done func(string) bool) []string {
	s.t.Helper()
	var seen []string
	ok := waitFor(s.ctx, waitFlink, func() bool {
		st := s.jobState()
		if st != "" && (len(seen) == 0 || seen[len(seen)-1] != st) {
			seen = append(seen, st)
		}
		return st != "" && done(st)
	})
	if !ok {
		s.t.Fatalf("%s: job states %v: waited %s", s.kind, seen, waitFlink)
	}
	return seen
}

// is is a state predicate.
func is(states ...string) func(string) bool {
	return func(st string) bool { return slices.Contains(states, st) }
}

// checkpoints is GET /jobs/:id/checkpoints.
func (s *side) checkpoints() any { return s.get("/jobs/" + s.jobID + "/checkpoints") }

// completed is the count of completed checkpoints, and the latest one's ID.
func completed(cps any) (count, latest int64) {
	count = num(field(field(cps, "counts"), "completed"))
	latest = num(field(field(field(cps, "latest"), "completed"), "id"))
	return count, latest
}

// waitCheckpoint waits for a completed checkpoint newer than after and returns the answer.
func (s *side) waitCheckpoint(after int64) any {
	s.t.Helper()
	var cps any
	if !waitFor(s.ctx, waitFlink, func() bool {
		cps = s.checkpoints()
		_, id := completed(cps)
		return id > after
	}) {
		_, exc, _ := s.call(http.MethodGet, "/jobs/"+s.jobID+"/exceptions", nil)
		s.t.Fatalf("%s: no checkpoint after %d in %s: %s (exceptions %s)", s.kind, after, waitFlink, s.norm.value(cps), s.norm.value(exc))
	}
	return cps
}

// operation triggers a savepoint (or a stop-with-savepoint) of job and polls its status until
// it completes; it returns the trigger's answer status and the final status answer.
func (s *side) operation(job, endpoint string, body map[string]any) (int, any, any) {
	s.t.Helper()
	code, v, err := s.call(http.MethodPost, "/jobs/"+job+"/"+endpoint, body)
	if err != nil {
		s.t.Fatalf("%s: POST %s: %v", s.kind, endpoint, err)
	}
	tid, _ := field(v, "request-id").(string)
	if tid == "" {
		return code, v, nil
	}
	var status any
	waitFor(s.ctx, waitFlink, func() bool {
		c, st, err := s.call(http.MethodGet, "/jobs/"+job+"/savepoints/"+tid, nil)
		status = st
		return err == nil && c == http.StatusOK && field(field(st, "status"), "id") == flinkclient.OperationCompleted
	})
	return code, v, status
}

// haConfigMaps describes the cluster's HA ConfigMaps: each one's name, labels, annotation
// keys and data keys.
func (s *side) haConfigMaps() []string {
	list := &corev1.ConfigMapList{}
	if err := k8s.List(s.ctx, list, client.InNamespace(s.ns), client.MatchingLabels(flinkha.Labels(resources.HAClusterID(s.fc)))); err != nil {
		s.t.Fatal(err)
	}
	var out []string
	for _, cm := range list.Items {
		if cm.DeletionTimestamp != nil {
			continue
		}
		var ann, data []string
		for k := range cm.Annotations {
			ann = append(ann, k)
		}
		for k := range cm.Data {
			data = append(data, k)
		}
		slices.Sort(ann)
		slices.Sort(data)
		out = append(out, fmt.Sprintf("%s labels=%v annotations=%v data=%v", cm.Name, cm.Labels, ann, data))
	}
	slices.Sort(out)
	return out
}

// haNames are the names of the cluster's HA ConfigMaps.
func (s *side) haNames() []string {
	var names []string
	for _, d := range s.haConfigMaps() {
		name, _, _ := strings.Cut(d, " ")
		names = append(names, name)
	}
	return names
}

// settledHA waits until the HA ConfigMaps' names have not changed for 3 s (at most 30 s) and
// describes them: what a cleanup left.
func (s *side) settledHA() []string {
	last, since := s.haNames(), time.Now()
	waitFor(s.ctx, 30*time.Second, func() bool {
		cur := s.haNames()
		if !slices.Equal(cur, last) {
			last, since = cur, time.Now()
		}
		return time.Since(since) >= 3*time.Second
	})
	return s.haConfigMaps()
}

// deleteConfigMap deletes an HA ConfigMap behind Flink's back.
func (s *side) deleteConfigMap(name string) {
	s.t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name}}
	if err := k8s.Delete(s.ctx, cm); err != nil {
		s.t.Fatalf("%s: deleting ConfigMap %s: %v", s.kind, name, err)
	}
}

// exit waits up to timeout for the JobManager container to end and returns its exit code and
// termination message, or ok false while it runs.
func (s *side) exit(timeout time.Duration) (code int32, message string, ok bool) {
	waitFor(s.ctx, timeout, func() bool {
		pods := &corev1.PodList{}
		if err := k8s.List(s.ctx, pods, client.InNamespace(s.ns), client.MatchingLabels{resources.LabelComponent: resources.ComponentJobManager}); err != nil {
			return false
		}
		for _, p := range pods.Items {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name == resources.JobManagerContainer && cs.State.Terminated != nil {
					code, message, ok = cs.State.Terminated.ExitCode, cs.State.Terminated.Message, true
					return true
				}
			}
		}
		return false
	})
	return code, message, ok
}

// fakeLeader is the fake side's leading JobManager process, or nil.
func (s *side) fakeLeader() *fakeflink.JobManager {
	if s.fake == nil {
		return nil
	}
	return s.fake.Leader()
}

// pod is the JobManager pod (for logs in failures).
func (s *side) pod() *corev1.Pod {
	pods := &corev1.PodList{}
	_ = k8s.List(s.ctx, pods, client.InNamespace(s.ns), client.MatchingLabels{resources.LabelComponent: resources.ComponentJobManager})
	if len(pods.Items) == 0 {
		return nil
	}
	return &pods.Items[0]
}
