//go:build conformance

package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/flinkcluster"
	"github.com/flink-admission/flink-admission/internal/test/realflink"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
)

// The rows after the pull request's table: what it did not test and this project claims.
func init() {
	table1 = append(table1,
		scenario{id: "13", name: "Last-state update from HA checkpoints", run: lastStateUpdate,
			na: deploymentOnly("last-state needs a JobManager Deployment (the webhook refuses it for a Job)")},
		scenario{id: "14", name: "Flink version upgrade of a running job", na: upgradeNA, run: versionUpgrade},
		scenario{id: "15", name: "Update while a TaskManager is killed", na: always, run: updateWhileRestarting},
		scenario{id: "16", name: "JobManager's node lost", run: jobManagerNodeLost,
			na: deploymentOnly("a Job-mode JobManager is not replaced (restartPolicy Never): scenario 7 covers its loss")},
		scenario{id: "17", name: "HA ConfigMaps deleted behind a running job", na: always, run: haDeletedBehindRunningJob},
		scenario{id: "18", name: "Controller restarted in the middle of an update", na: always, run: controllerRestartedMidUpdate},
	)
}

// upgradeTarget is the Flink version after v in the suite, "" for the newest.
func upgradeTarget(v string) string {
	i := slices.Index(realflink.Versions, v)
	if i < 0 || i+1 >= len(realflink.Versions) {
		return ""
	}
	return realflink.Versions[i+1]
}

func upgradeNA(_ v1beta1.JobManagerDeploymentType, v string) string {
	if upgradeTarget(v) == "" {
		return "no newer Flink version in the suite to upgrade to"
	}
	return ""
}

// modify changes the cluster's spec, retrying on conflicts with the controller's writes.
func (c *cell) modify(what string, fn func(*v1beta1.FlinkCluster)) {
	c.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fc := c.get()
		fn(fc)
		return k8s.Update(context.Background(), fc)
	})
	if err != nil {
		c.fatalf("%s: %v", what, err)
	}
}

// exactSince checks every start reported after the first n: it restored a checkpoint no
// older than oldest, with exactly the count its subtask snapshotted there.
func (c *cell) exactSince(n int, oldest int64) {
	c.t.Helper()
	r := c.report()
	for _, s := range r.starts[n:] {
		if s.RestoredCheckpointID < oldest {
			c.fatalf("subtask %d restored checkpoint %d, older than %d (the job's state was rewound or lost)", s.Subtask, s.RestoredCheckpointID, oldest)
		}
		want, ok := r.snapshotCount(s.Subtask, s.RestoredCheckpointID)
		if !ok {
			c.fatalf("subtask %d restored checkpoint %d, which it never snapshotted", s.Subtask, s.RestoredCheckpointID)
		}
		if s.RestoredCount != want {
			c.fatalf("subtask %d restored count %d from checkpoint %d, which held %d", s.Subtask, s.RestoredCount, s.RestoredCheckpointID, want)
		}
	}
}

// revisionRolled waits until the revision after old runs its job: the update is done.
func (c *cell) revisionRolled(old string) *v1beta1.FlinkCluster {
	c.t.Helper()
	var fc *v1beta1.FlinkCluster
	c.eventually("the next revision running", waitLong, func() bool {
		fc = c.get()
		rev := fc.Status.Revision
		return rev.CurrentRevision != old && rev.CurrentRevision == rev.NextRevision && jobOf(fc).State == v1beta1.JobStateRunning
	})
	return fc
}

// lastStateUpdate: an update with upgradeMode last-state takes no savepoint: the next deploy
// runs under the same job ID and Flink restores the newest checkpoint in its HA store, no
// older than the one completed before the update, with exactly what it held.
func lastStateUpdate(c *cell) {
	c.create(c.counting().Job(func(j *v1beta1.JobSpec) { j.UpgradeMode = ptr.To(v1beta1.UpgradeModeLastState) }).Obj())
	fc := c.waitJob(v1beta1.JobStateRunning)
	id := jobOf(fc).ID
	ckpt := c.waitCheckpoint(id, c.waitCheckpoint(id, 0))
	old := c.jmPods()
	starts := len(c.report().starts)
	c.modify("the update", func(fc *v1beta1.FlinkCluster) { fc.Spec.FlinkProperties["conformance.update"] = "1" })
	fc = c.revisionRolled(fc.Status.Revision.CurrentRevision)
	if got := jobOf(fc).ID; got != id {
		c.fatalf("job ID %s after a last-state update, want %s", got, id)
	}
	if pods := c.jmPods(); len(pods) != 1 || len(old) != 1 || pods[0].UID == old[0].UID {
		c.fatalf("the JobManager pod was not replaced")
	}
	c.eventually("the job's subtasks to start again", waitLong, func() bool { return len(c.report().starts) >= starts+2 })
	c.exactSince(starts, ckpt)
}

// versionUpgrade: a running job's image and flinkVersion move to the next Flink release; the
// update stops it with a savepoint and the new release restores exactly that savepoint.
func versionUpgrade(c *cell) {
	fc, id := c.running()
	to := upgradeTarget(c.version)
	starts := len(c.report().starts)
	c.modify("the upgrade", func(fc *v1beta1.FlinkCluster) {
		fc.Spec.Image.Name = "flink:" + to
		fc.Spec.FlinkVersion = to
	})
	fc = c.revisionRolled(fc.Status.Revision.CurrentRevision)
	if jobOf(fc).ID == id || jobOf(fc).SavepointLocation == "" {
		c.fatalf("job %s, savepoint %q: want a new job restored from a savepoint", jobOf(fc).ID, jobOf(fc).SavepointLocation)
	}
	pods := c.jmPods()
	if len(pods) != 1 || pods[0].Spec.Containers[0].Image != "flink:"+to {
		c.fatalf("the JobManager does not run flink:%s", to)
	}
	c.restoredExactly(starts, c.report().newestSnapshotBefore(starts))
}

// runningTasks is the number of the job's tasks Flink reports RUNNING (JobDetailsInfo's
// status-counts), -1 when its REST API does not answer.
func (c *cell) runningTasks(id string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, controller.JobManagerURL(c.get())+"/jobs/"+id, nil)
	if err != nil {
		return -1
	}
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var details struct {
		StatusCounts map[string]int `json:"status-counts"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&details) != nil {
		return -1
	}
	return details.StatusCounts["RUNNING"]
}

// flinkJobState is the job's state as Flink's REST API reports it now, "" when it does not
// answer.
func (c *cell) flinkJobState(id string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	j, err := c.flink().GetJob(ctx, id)
	if err != nil {
		return ""
	}
	return j.State
}

// tmPods are the cluster's TaskManager pods.
func (c *cell) tmPods() []corev1.Pod {
	c.t.Helper()
	return c.componentPods(resources.ComponentTaskManager)
}

// updateWhileRestarting: the TaskManager is killed and, while Flink restarts the job's tasks
// (the job RESTARTING, then RUNNING with its tasks waiting for slots until the StatefulSet's
// new TaskManager registers), the spec changes. Flink fails a savepoint while not all tasks
// run: the update asks again once they do, and the next deploy restores exactly that
// savepoint; the restart in between restored a checkpoint exactly.
func updateWhileRestarting(c *cell) {
	fc, id := c.running()
	ckpt := c.waitCheckpoint(id, 0)
	tms := c.tmPods()
	if len(tms) != 1 {
		c.fatalf("%d TaskManager pods, want 1", len(tms))
	}
	starts := len(c.report().starts)
	grace := int64(1)
	if err := k8s.Delete(context.Background(), &tms[0], &client.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		c.fatalf("deleting the TaskManager pod: %v", err)
	}
	c.eventually("Flink restarting the job's tasks", waitLong, func() bool {
		n := c.runningTasks(id)
		return n >= 0 && n < 4 // two vertices of parallelism 2
	})
	c.modify("the update", func(fc *v1beta1.FlinkCluster) { fc.Spec.FlinkProperties["conformance.update"] = "1" })
	fc = c.revisionRolled(fc.Status.Revision.CurrentRevision)
	if jobOf(fc).ID == id || jobOf(fc).SavepointLocation == "" {
		c.fatalf("job %s, savepoint %q: want a new job restored from a savepoint", jobOf(fc).ID, jobOf(fc).SavepointLocation)
	}
	r := c.report()
	last := len(r.starts) - 2
	c.restoredExactly(last, r.newestSnapshotBefore(last))
	c.exactSince(starts, ckpt)
}

// jobManagerNodeLost: the JobManager runs on one of two nodes of the cell's own, and that
// node loses power (its kubelet and the JVM stop
// together). The node controller taints it, the pod is evicted after the JobManager's
// toleration and stays Terminating (no kubelet confirms its end), the Deployment's
// replacement runs on another node and recovers the same job from HA at its newest
// checkpoint.
func jobManagerNodeLost(c *cell) {
	c.ownNode(0)
	c.ownNode(1)
	c.create(c.counting().JobManager(func(jm *v1beta1.JobManagerSpec) {
		jm.NodeSelector = map[string]string{cellNodeKey: c.ns}
		jm.Tolerations = append(jm.Tolerations, corev1.Toleration{Key: cellNodeKey, Operator: corev1.TolerationOpEqual, Value: c.ns, Effect: corev1.TaintEffectNoSchedule})
	}).Obj())
	fc := c.waitJob(v1beta1.JobStateRunning)
	id := jobOf(fc).ID
	ckpt := c.waitCheckpoint(id, 0)
	pods := c.jmPods()
	if len(pods) != 1 || !strings.HasPrefix(pods[0].Spec.NodeName, c.ns) {
		c.fatalf("the JobManager pod does not run on a node of the cell's")
	}
	old := pods[0]
	node := old.Spec.NodeName
	starts := len(c.report().starts)
	if err := cp.StopNode(node); err != nil {
		c.fatalf("stopping node %s: %v", node, err)
	}
	if p := sim.Launched(old.Namespace, old.Name); p != nil {
		p.Kill()
	}
	// Nothing may schedule there again: the replacement must run elsewhere.
	c.cordon(node)
	c.eventually("the JobManager pod evicted", waitLong, func() bool {
		p := &corev1.Pod{}
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(&old), p)
		return err == nil && p.DeletionTimestamp != nil
	})
	c.eventually("a replacement JobManager pod running", waitLong, func() bool {
		for _, p := range c.jmPods() {
			if p.UID != old.UID && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				return true
			}
		}
		return false
	})
	c.recovered(id, starts, ckpt)
}

// cellNodeKey labels and taints a node a cell owns.
const cellNodeKey = "conformance.flink-admission.dev/cell"

// ownNode adds the i-th KWOK node only the cell's JobManager may run on; it goes with the
// cell (before the namespace, so that the pod stuck on it is collected).
func (c *cell) ownNode(i int) string {
	c.t.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("%s-node-%d", c.ns, i)
	if err := cp.AddNode(ctx, name, testenv.ReservedFor(cellNodeKey, c.ns)); err != nil {
		c.fatalf("adding node %s: %v", name, err)
	}
	c.t.Cleanup(func() {
		if err := cp.DeleteNode(context.Background(), name); err != nil {
			c.t.Logf("deleting node %s: %v", name, err)
		}
	})
	return name
}

func (c *cell) cordon(node string) {
	c.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := k8s.Get(context.Background(), types.NamespacedName{Name: node}, n); err != nil {
			return err
		}
		n.Spec.Unschedulable = true
		return k8s.Update(context.Background(), n)
	})
	if err != nil {
		c.fatalf("cordoning node %s: %v", node, err)
	}
}

// haConfigMaps are the names of the cluster's HA ConfigMaps Flink made.
func (c *cell) haConfigMaps() []corev1.ConfigMap {
	fc := c.get()
	c.t.Helper()
	cms := &corev1.ConfigMapList{}
	if err := k8s.List(context.Background(), cms, client.InNamespace(c.ns)); err != nil {
		c.fatalf("listing ConfigMaps: %v", err)
	}
	var out []corev1.ConfigMap
	for _, cm := range cms.Items {
		if flinkha.IsHAConfigMap(&cm, resources.HAClusterID(fc)) {
			out = append(out, cm)
		}
	}
	return out
}

// haDeletedBehindRunningJob: every HA ConfigMap of a running job is deleted (a user's
// kubectl delete, a namespace cleanup). Flink's leader exits ("ConfigMap ... has been deleted
// externally", code 239). A Deployment's restarted JobManager runs main() again, finds no
// job graph, and the controller's restore path makes the job fail instead of starting from
// empty state: SavepointRequired=True/HAMetadataMissing (or, when the controller saw none of
// it, Lost and ended unobserved past the HA recovery grace), the user answers with a restore
// path. A Job's JobManager is not restarted: the job is Failed with Flink's reason, and the
// user redeploys with spec.job.fromSavepoint. Either way nothing starts without its state,
// and the answer — the newest checkpoint Flink left on disk — is restored exactly, no older
// than the one completed before the deletion.
func haDeletedBehindRunningJob(c *cell) {
	_, id := c.running()
	ckpt := c.waitCheckpoint(id, 0)
	starts := len(c.report().starts)
	cms := c.haConfigMaps()
	if len(cms) < 2 {
		c.fatalf("%d HA ConfigMaps, want the cluster's and the job's", len(cms))
	}
	for i := range cms {
		if err := k8s.Delete(context.Background(), &cms[i]); err != nil {
			c.fatalf("deleting %s: %v", cms[i].Name, err)
		}
	}
	var fc *v1beta1.FlinkCluster
	// answer is how the user redeploys: the restore-from annotation answers SavepointRequired,
	// a spec.job.fromSavepoint change any other end.
	annotate := false
	if c.mode == v1beta1.JobManagerDeploymentTypeDeployment {
		// The controller reads the loss from the HA store when it sees the JobManager
		// container that made the cluster ConfigMap again list no job, or the job FAILED on
		// the resume-from-HA-only path: SavepointRequired. Under load it may see neither (the
		// container that failed the job exits within a second, the next lists no job and
		// did not make the ConfigMap): then past the HA recovery grace the job is Lost,
		// ended unobserved. Either way nothing started it without its state.
		c.eventually("SavepointRequired=True/HAMetadataMissing or Lost=True/EndedUnobserved", waitLong, func() bool {
			fc = c.get()
			sr := meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionSavepointRequired)
			lost := meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionLost)
			annotate = sr != nil && sr.Status == metav1.ConditionTrue && sr.Reason == controller.ConditionReasonHAMetadataMissing
			return annotate || (lost != nil && lost.Status == metav1.ConditionTrue && lost.Reason == controller.ConditionReasonEndedUnobserved)
		})
	} else {
		fc = c.waitJob(v1beta1.JobStateFailed)
		if r := jobOf(fc).FailureReasons; len(r) == 0 || !strings.Contains(r[0], "deleted externally") {
			c.fatalf("failure reasons %q, want Flink's: the ConfigMap deleted externally", r)
		}
	}
	// Flink may have restarted the job's tasks before its leader exited (a checkpoint that
	// found no checkpoint ConfigMap fails the job over): they restored a checkpoint exactly.
	c.exactSince(starts, ckpt)
	starts = len(c.report().starts)
	path, newest := c.newestRetainedCheckpoint(id)
	if newest < ckpt {
		c.fatalf("the newest checkpoint on disk is %d, older than %d", newest, ckpt)
	}
	c.modify("the user's answer", func(fc *v1beta1.FlinkCluster) {
		if !annotate {
			fc.Spec.Job.FromSavepoint = ptr.To(path)
			return
		}
		if fc.Annotations == nil {
			fc.Annotations = map[string]string{}
		}
		fc.Annotations[flinkcluster.RestoreAnnotation] = path
	})
	c.eventually("a new job running", waitLong, func() bool {
		j := jobOf(c.get())
		return j.ID != "" && j.ID != id && j.State == v1beta1.JobStateRunning
	})
	c.restoredExactly(starts, newest)
}

// newestRetainedCheckpoint is the newest checkpoint of job id whose metadata Flink wrote to
// the cell's checkpoint directory, as a restore path, and its ID.
func (c *cell) newestRetainedCheckpoint(id string) (string, int64) {
	c.t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(c.dir, "checkpoints", id, "chk-*", "_metadata"))
	var newest int64
	var path string
	for _, m := range dirs {
		dir := filepath.Dir(m)
		n, err := strconv.ParseInt(strings.TrimPrefix(filepath.Base(dir), "chk-"), 10, 64)
		if err == nil && n > newest {
			newest, path = n, "file://"+dir
		}
	}
	if path == "" {
		c.fatalf("no checkpoint of job %s on disk", id)
	}
	return path, newest
}

func conditionsOf(fc *v1beta1.FlinkCluster) string {
	var s string
	for _, cond := range fc.Status.Conditions {
		if cond.Status == metav1.ConditionTrue {
			s += fmt.Sprintf("%s/%s %q; ", cond.Type, cond.Reason, cond.Message)
		}
	}
	return s
}

// controllerRestartedMidUpdate: the controller stops while the update's stop-with-savepoint
// is in flight, and a new one takes over: it finds the operation and its savepoint, and the
// next deploy restores exactly that savepoint; nothing is stopped or deployed twice.
func controllerRestartedMidUpdate(c *cell) {
	stop := c.ownController()
	defer func() { stop() }()
	c.create(c.counting().Label(ownControllerLabel, c.ns).Obj())
	fc := c.waitJob(v1beta1.JobStateRunning)
	id := jobOf(fc).ID
	c.waitCheckpoint(id, 0)
	starts := len(c.report().starts)
	c.modify("the update", func(fc *v1beta1.FlinkCluster) { fc.Spec.FlinkProperties["conformance.update"] = "1" })
	c.eventually("the update's stop-with-savepoint in flight", waitLong, func() bool {
		sp := c.get().Status.Savepoint
		return sp != nil && sp.JobID == id && sp.TriggerID != ""
	})
	stop()
	// The stop completes in Flink while no controller runs.
	c.eventually("Flink's stop done", waitLong, func() bool {
		s := c.flinkJobState(id)
		return s == flinkclient.JobStateFinished || s == ""
	})
	stop = c.ownController()
	fc = c.revisionRolled(fc.Status.Revision.CurrentRevision)
	if jobOf(fc).ID == id || jobOf(fc).SavepointLocation == "" {
		c.fatalf("job %s, savepoint %q: want a new job restored from a savepoint", jobOf(fc).ID, jobOf(fc).SavepointLocation)
	}
	c.restoredExactly(starts, c.report().newestSnapshotBefore(starts))
}
