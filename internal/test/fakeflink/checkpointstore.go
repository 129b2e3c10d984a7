package fakeflink

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/flink-admission/flink-admission/controller/flinkha"
)

// The HA store as Flink lays it out (KubernetesStateHandleStore): a ConfigMap entry holds no
// state, only a serialized RetrievableStateHandle pointing at a file in
// high-availability.storageDir/<cluster-id>/ that holds it (FileSystemStateStorageHelper,
// prefixes "submittedJobGraph" and "completedCheckpoint"). The controller sees opaque
// values, as with Flink; only the keys say which jobs and checkpoint IDs are stored.
const (
	// PropNumRetained is state.checkpoints.num-retained: how many completed checkpoints the
	// store keeps (DefaultCompletedCheckpointStore subsumes older ones); default 1.
	PropNumRetained = "state.checkpoints.num-retained"
	// javaSerializationMagic starts every Java-serialized object (STREAM_MAGIC, STREAM_VERSION):
	// the entries' base64 values begin "rO0AB", as Flink's do.
	javaSerializationMagic = "\xac\xed\x00\x05"
	handlePrefix           = javaSerializationMagic + "RetrievableStreamStateHandle:"
)

// storedCheckpoint is a completedCheckpoint file: the CompletedCheckpoint's metadata.
type storedCheckpoint struct {
	ID           int64  `json:"id"`
	ExternalPath string `json:"externalPath"`
	Timestamp    int64  `json:"timestamp"`
}

// storeFileLocked writes content to a new file of the HA storage directory and returns the
// ConfigMap value that points at it.
func (p *JobManager) storeFileLocked(prefix string, content []byte, salt ...string) string {
	dir := p.dirProp(PropHAStorageDir, defaultHAStorageDir) + "/" + p.clusterID()
	path := dir + "/" + prefix + deriveID(append([]string{prefix, string(content)}, salt...)...)[:12]
	if p.c.haFiles == nil {
		p.c.haFiles = map[string][]byte{}
	}
	p.c.haFiles[path] = content
	return base64.StdEncoding.EncodeToString([]byte(handlePrefix + path))
}

// readFileLocked follows a ConfigMap value to its file; ok is false for a value that is no
// handle or whose file is gone.
func (p *JobManager) readFileLocked(value string) ([]byte, bool) {
	raw, err := base64.StdEncoding.DecodeString(value)
	if err != nil || !bytes.HasPrefix(raw, []byte(handlePrefix)) {
		return nil, false
	}
	content, ok := p.c.haFiles[string(raw[len(handlePrefix):])]
	return content, ok
}

// storeGraphLocked stores a job's graph in the cluster ConfigMap, as the Dispatcher does
// before it runs a submitted job.
func (p *JobManager) storeGraphLocked(id string, g storedGraph) {
	b, _ := json.Marshal(g)
	value := p.storeFileLocked("submittedJobGraph", b, id)
	p.editClusterCM(func(cm *corev1.ConfigMap) { cm.Data[p.graphKey(id)] = value })
}

// readGraphLocked reads a stored job graph; ok is false when its entry or file is unreadable.
func (p *JobManager) readGraphLocked(cm *corev1.ConfigMap, id string) (storedGraph, bool) {
	var g storedGraph
	content, ok := p.readFileLocked(cm.Data[p.graphKey(id)])
	if !ok || json.Unmarshal(content, &g) != nil {
		return storedGraph{}, false
	}
	return g, true
}

// latestCheckpointLocked is what a JobMaster of jobID recovers from the checkpoint store:
// the completed checkpoint with the highest ID, and the ID counter (the next ID to use).
func (p *JobManager) latestCheckpointLocked(jobID string) (cp storedCheckpoint, counter int64, ok bool) {
	if !p.ha() {
		return storedCheckpoint{}, 0, false
	}
	cm, err := p.c.ha.Get(context.Background(), flinkha.JobConfigMapName(p.clusterID(), jobID))
	if err != nil || cm == nil {
		return storedCheckpoint{}, 0, false
	}
	counter, _ = strconv.ParseInt(cm.Data[flinkha.CheckpointCounterKey], 10, 64)
	ids := flinkha.CheckpointIDs(cm)
	for i := len(ids) - 1; i >= 0; i-- {
		content, found := p.readFileLocked(cm.Data[flinkha.CheckpointKey(ids[i])])
		if found && json.Unmarshal(content, &cp) == nil {
			return cp, max(counter, cp.ID+1), true
		}
	}
	return storedCheckpoint{}, counter, false
}

// jobConfigMapLocked reads the job's HA ConfigMap, which holds its checkpoint store and ID
// counter; nil when it is gone.
func (p *JobManager) jobConfigMapLocked(jobID string) (*corev1.ConfigMap, error) {
	return p.c.ha.Get(context.Background(), flinkha.JobConfigMapName(p.clusterID(), jobID))
}

// createJobConfigMapLocked creates the job's HA ConfigMap unless it exists, as the JobMaster
// does when it starts (KubernetesUtils.createConfigMapIfItDoesNotExist, for the checkpoint
// ID counter and the completed checkpoint store). It is the only place the fake creates it:
// Flink never creates it again while the job runs, so once it is deleted every checkpoint and
// savepoint of the job fails (jobConfigMapGone).
func (p *JobManager) createJobConfigMapLocked(jobID string) {
	name := flinkha.JobConfigMapName(p.clusterID(), jobID)
	if cm, err := p.c.ha.Get(context.Background(), name); err != nil || cm != nil {
		return
	}
	_ = p.c.ha.Put(context.Background(), p.c.haConfigMap(name))
}

// jobConfigMapGone is why a checkpoint or savepoint fails when the job's HA ConfigMap was
// deleted: the CheckpointIDCounter's update of its key finds no ConfigMap
// (Fabric8FlinkKubeClient.checkAndUpdateConfigMap), the coordinator fails the trigger
// (TRIGGER_CHECKPOINT_FAILURE, which the failure manager does not count against the job).
func (p *JobManager) jobConfigMapGone(jobID string) string {
	return "java.util.concurrent.CompletionException: org.apache.flink.runtime.checkpoint.CheckpointException: Trigger checkpoint failure.\n" +
		"Caused by: org.apache.flink.kubernetes.kubeclient.resources.KubernetesException: Cannot retry checkAndUpdateConfigMap with configMap " +
		flinkha.JobConfigMapName(p.clusterID(), jobID) + " because it does not exist."
}

// storeCheckpointLocked adds a completed checkpoint to the job's store in cm (its HA
// ConfigMap, as read), advances the counter and drops the checkpoints beyond
// state.checkpoints.num-retained: one write of the ConfigMap read.
func (p *JobManager) storeCheckpointLocked(cm *corev1.ConfigMap, jobID string, cp storedCheckpoint) {
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	b, _ := json.Marshal(cp)
	cm.Data[flinkha.CheckpointKey(cp.ID)] = p.storeFileLocked("completedCheckpoint", b, jobID)
	cm.Data[flinkha.CheckpointCounterKey] = itoa(cp.ID + 1)
	retain := p.retained()
	if ids := flinkha.CheckpointIDs(cm); len(ids) > retain {
		for _, id := range ids[:len(ids)-retain] {
			delete(cm.Data, flinkha.CheckpointKey(id))
		}
	}
	_ = p.c.ha.Put(context.Background(), cm)
}

// advanceCounterLocked records in the job's ConfigMap that checkpoint ID next-1 is used (a
// savepoint takes its ID from the same CheckpointIDCounter, a restore from a savepoint sets
// it past the savepoint's); a job without one gets none.
func (p *JobManager) advanceCounterLocked(jobID string, next int64) {
	if !p.ha() {
		return
	}
	cm, err := p.jobConfigMapLocked(jobID)
	if err != nil || cm == nil {
		return
	}
	if cur, _ := strconv.ParseInt(cm.Data[flinkha.CheckpointCounterKey], 10, 64); cur >= next {
		return
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[flinkha.CheckpointCounterKey] = itoa(next)
	_ = p.c.ha.Put(context.Background(), cm)
}

// CheckpointObserver is an Observer that is also told of every completed checkpoint.
type CheckpointObserver interface {
	// CheckpointCompleted: process p completed checkpoint id of a job, restorable from path.
	CheckpointCompleted(p *JobManager, jobID string, id int64, path string)
}

// syncCounterLocked brings a job's last used checkpoint ID up to the HA counter of cm, the
// job's ConfigMap (KubernetesCheckpointIDCounter): with HA, checkpoint and savepoint IDs come
// from there, shared by every JobManager that runs the job, not from the process.
func syncCounter(j *job, cm *corev1.ConfigMap) {
	if cm == nil {
		return
	}
	if next, err := strconv.ParseInt(cm.Data[flinkha.CheckpointCounterKey], 10, 64); err == nil && next-1 > j.lastCheckpointID {
		j.lastCheckpointID = next - 1
	}
}
