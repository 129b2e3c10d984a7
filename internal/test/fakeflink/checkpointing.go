package fakeflink

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"strings"
	"time"

	"github.com/flink-admission/flink-admission/controller/flinkclient"
)

// Periodic checkpoints as Flink's CheckpointCoordinator takes them: with
// execution.checkpointing.interval set, a job that runs is checkpointed every interval from
// the time it became RUNNING (CheckpointCoordinatorDeActivator starts the scheduler then and
// stops it when the job leaves RUNNING: a restart begins a new schedule); each checkpoint is
// triggered, completes Options.CheckpointDuration later, lands in the job's checkpoint store
// in HA (so a recovery or a last-state redeploy restores the newest one) and is counted in the
// execution's CheckpointingStatistics. Nothing runs in the background: checkpoints due by the
// clock complete whenever the cluster is next looked at, or before a job changes state or its
// process ends, so none is missed.
const (
	// PropCheckpointInterval is execution.checkpointing.interval; unset (Flink's default)
	// disables periodic checkpoints.
	PropCheckpointInterval = "execution.checkpointing.interval"
	// PropCheckpointHistory is web.checkpoints.history: how many checkpoints the statistics'
	// history keeps; default 10.
	PropCheckpointHistory = "web.checkpoints.history"
	// minCheckpointInterval is CheckpointCoordinatorConfiguration's MINIMAL_CHECKPOINT_TIME:
	// Flink refuses a shorter interval; the fake takes none.
	minCheckpointInterval    = 10 * time.Millisecond
	defaultCheckpointHistory = 10
)

// checkpointInterval is the job's periodic checkpoint interval, or 0 without checkpointing.
func (p *JobManager) checkpointInterval() time.Duration {
	d := durationProp(p.prop(PropCheckpointInterval), 0)
	if d < minCheckpointInterval {
		return 0
	}
	return d
}

// checkpointDuration is how long a periodic checkpoint takes from its trigger to its
// completion: Options.CheckpointDuration (default a tenth of the interval), at most the
// interval, as checkpoints do not overlap (execution.checkpointing.max-concurrent-checkpoints 1).
func (p *JobManager) checkpointDuration(interval time.Duration) time.Duration {
	d := p.c.opts.CheckpointDuration
	if d <= 0 {
		d = interval / 10
	}
	return min(d, interval)
}

func (p *JobManager) checkpointHistory() int {
	if n, err := strconv.Atoi(strings.TrimSpace(p.prop(PropCheckpointHistory))); err == nil && n > 0 {
		return n
	}
	return defaultCheckpointHistory
}

// settleCheckpointsLocked completes the periodic checkpoints due by the clock on every
// leading process.
func (c *Cluster) settleCheckpointsLocked() {
	for _, p := range c.procs {
		p.settleCheckpointsLocked()
	}
}

// settleCheckpointsLocked completes this process's periodic checkpoints due by the clock. A
// process cut off from the API server completes none: it cannot write the checkpoint's
// pointer to its HA ConfigMap.
func (p *JobManager) settleCheckpointsLocked() {
	if !p.alive || !p.leader || p.partitioned {
		return
	}
	interval := p.checkpointInterval()
	now := p.c.nowMillis()
	for _, j := range p.jobs {
		if interval == 0 || j.state != flinkclient.JobStateRunning {
			j.cpNext = 0
			continue
		}
		step, took := interval.Milliseconds(), p.checkpointDuration(interval).Milliseconds()
		if j.cpNext == 0 {
			// The scheduler starts when the job became RUNNING; the first checkpoint comes one
			// interval later (Flink draws its initial delay at random up to the interval).
			j.cpNext = max(j.lastModified, j.start) + step
		}
		if now < j.cpNext+took {
			continue
		}
		due := (now-j.cpNext-took)/step + 1
		// A clock moved far ahead: only the checkpoints that can still show (in the store or
		// the statistics' history) are written one by one; the others only count.
		if keep := int64(max(p.retained(), p.checkpointHistory())); due > keep {
			skipped := due - keep
			if cm, gone := p.checkpointConfigMapLocked(j); gone {
				j.cpFailed += skipped
			} else {
				syncCounter(j, cm)
				j.lastCheckpointID += skipped
				j.cpCompleted += skipped
			}
			j.cpNext += skipped * step
			due = keep
		}
		for range due {
			p.completeCheckpointLocked(j, j.cpNext, j.cpNext+took)
			j.cpNext += step
		}
	}
}

// nextCheckpointLocked is when j's next periodic checkpoint completes (Unix ms), 0 when none
// is scheduled: the job does not run, or checkpointing is off.
func (p *JobManager) nextCheckpointLocked(j *job) int64 {
	interval := p.checkpointInterval()
	if interval == 0 || j.state != flinkclient.JobStateRunning || p.partitioned {
		return 0
	}
	next := j.cpNext
	if next == 0 {
		next = max(j.lastModified, j.start) + interval.Milliseconds()
	}
	return next + p.checkpointDuration(interval).Milliseconds()
}

// checkpointInProgress reports whether a periodic checkpoint of j is triggered and not yet
// complete.
func (p *JobManager) checkpointInProgress(j *job) bool {
	if j.cpNext == 0 || j.state != flinkclient.JobStateRunning {
		return false
	}
	return p.c.nowMillis() >= j.cpNext
}

// checkpointConfigMapLocked reads the job's HA ConfigMap for a checkpoint or savepoint: gone
// is true when the job runs with HA and its ConfigMap was deleted, which fails every
// checkpoint and savepoint of the job (jobConfigMapGone); cm is nil without HA.
func (p *JobManager) checkpointConfigMapLocked(j *job) (cm *corev1.ConfigMap, gone bool) {
	if !p.ha() {
		return nil, false
	}
	cm, err := p.jobConfigMapLocked(j.id)
	if err != nil {
		// The API server did not answer: the coordinator's update fails as well.
		return nil, true
	}
	return cm, cm == nil
}

// completeCheckpointLocked completes a checkpoint of j triggered at trigger and acknowledged
// by every task at ack (Unix ms) and returns its path: it takes the next checkpoint ID, becomes
// the job's latest completed checkpoint, and with HA lands in the job's checkpoint store. With
// HA and the job's ConfigMap gone, the checkpoint fails instead (no ID is taken, the
// statistics count a failure, the job runs on) and the path is "".
func (p *JobManager) completeCheckpointLocked(j *job, trigger, ack int64) string {
	cm, gone := p.checkpointConfigMapLocked(j)
	if gone {
		j.cpFailed++
		return ""
	}
	syncCounter(j, cm)
	j.lastCheckpointID++
	id := j.lastCheckpointID
	path := p.checkpointDir() + "/" + j.id + "/chk-" + itoa(id)
	j.completed = &checkpoint{id: id, path: path, trigger: trigger, ack: ack}
	p.recordStatsLocked(j, j.completed)
	if cm != nil {
		p.storeCheckpointLocked(cm, j.id, storedCheckpoint{ID: id, ExternalPath: path, Timestamp: trigger})
	}
	if o, ok := p.c.opts.Observer.(CheckpointObserver); ok {
		o.CheckpointCompleted(p, j.id, id, path)
	}
	return path
}

// recordStatsLocked counts a completed checkpoint or savepoint in the execution's statistics
// (CheckpointStatsTracker) and puts it first in their history, which keeps
// web.checkpoints.history entries.
func (p *JobManager) recordStatsLocked(j *job, cp *checkpoint) {
	j.cpCompleted++
	j.cpHistory = append([]*checkpoint{cp}, j.cpHistory...)
	if n := p.checkpointHistory(); len(j.cpHistory) > n {
		j.cpHistory = j.cpHistory[:n]
	}
}

// retained is state.checkpoints.num-retained: how many completed checkpoints the store keeps.
func (p *JobManager) retained() int {
	if n, err := strconv.Atoi(strings.TrimSpace(p.prop(PropNumRetained))); err == nil && n > 0 {
		return n
	}
	return 1
}
