package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// phase is where a savepoint request stands.
type phase int

const (
	pending phase = iota
	succeeded
	failed
)

// requestSavepoint records a new savepoint request with the trigger ID it will be made
// under; driveSavepoint writes it to the status before it calls Flink, so that a retry after
// a lost answer or a lost status write asks about the same operation (Flink's triggerId
// idempotency) instead of stopping a job that already stopped.
func (c *cycle) requestSavepoint(reason string) {
	replaceSavepointRecord(c.st, &v1beta1.SavepointStatus{
		JobID:         c.job().ID,
		TriggerID:     c.r.Options.NewID(),
		TriggerReason: reason,
		RequestTime:   state.Time(c.now),
		State:         SavepointStateRequested,
	})
}

// replaceSavepointRecord replaces status.savepoint (next may be nil). A record it replaces
// whose trigger reached Flink with no outcome learnt (in progress, or unknown) leaves its
// trigger time in status.components.job.unknownSavepointTime: the savepoint may have
// completed, and the record was the only trace of it that lastState reads (Flink's HA
// checkpoint store never holds savepoints).
func replaceSavepointRecord(st *v1beta1.FlinkClusterStatus, next *v1beta1.SavepointStatus) {
	job := st.Components.Job
	if old := st.Savepoint; old != nil && job != nil && old.JobID != "" && old.JobID == job.ID && old.TriggerTime != "" &&
		old.State != SavepointStateSucceeded && old.State != SavepointStateFailed {
		if job.UnknownSavepointTime == "" || state.ParseTime(old.TriggerTime).After(state.ParseTime(job.UnknownSavepointTime)) {
			job.UnknownSavepointTime = old.TriggerTime
		}
	}
	st.Savepoint = next
}

func (c *cycle) savepointRequest() flinkclient.SavepointRequest {
	req := flinkclient.SavepointRequest{TriggerID: c.st.Savepoint.TriggerID}
	if j := c.fc.Spec.Job; j != nil {
		if j.SavepointsDir != nil {
			req.TargetDirectory = *j.SavepointsDir
		}
		if j.SavepointFormatType != nil {
			req.FormatType = string(*j.SavepointFormatType)
		}
	}
	return req
}

// driveSavepoint moves the recorded savepoint request one step: trigger it through a trusted
// JobManager, then poll it. stop takes the savepoint with stop-with-savepoint.
func (c *cycle) driveSavepoint(ctx context.Context, out *flowOut, stop bool) (phase, error) {
	sp := c.st.Savepoint
	if sp == nil {
		return failed, nil
	}
	switch sp.State {
	case SavepointStateSucceeded:
		return succeeded, nil
	case SavepointStateFailed, SavepointStateUnknown:
		return failed, nil
	case SavepointStateRequested:
		return c.triggerSavepoint(ctx, out, stop)
	}
	return c.pollSavepoint(ctx, out, stop)
}

func (c *cycle) triggerSavepoint(ctx context.Context, out *flowOut, stop bool) (phase, error) {
	sp := c.st.Savepoint
	if c.job().State != v1beta1.JobStateRunning && c.job().State != v1beta1.JobStateUpdating {
		return c.savepointFailed(fmt.Sprintf("job is %s, not Running", c.job().State)), nil
	}
	if sp.TriggerTime == "" && out.pastDeadline(c.now, state.ParseTime(sp.RequestTime), c.r.Options.SavepointTimeout) {
		return c.savepointFailed(fmt.Sprintf("not triggered within --savepoint-timeout (%s) of its request", c.r.Options.SavepointTimeout)), nil
	}
	if c.obs.flink == nil {
		if w := standing(c.obs, out.objects).wl; (w == nil && c.mode == v1beta1.JobManagerDeploymentTypeJob) || (w != nil && (w.Complete || w.Failed)) {
			// A JobManager Job that ended (or is gone) is not coming back to take the savepoint.
			if sp.TriggerTime != "" {
				// The trigger may have been sent (its answer not recorded) and taken.
				return c.savepointUnknown("the JobManager exited before the savepoint's trigger was confirmed: Flink may have taken it"), nil
			}
			return c.savepointFailed("the JobManager exited before the savepoint was triggered"), nil
		}
		if sp.TriggerTime != "" && out.pastDeadline(c.now, state.ParseTime(sp.TriggerTime), c.r.Options.SavepointTimeout) {
			return c.savepointUnknown(fmt.Sprintf("no JobManager answered within --savepoint-timeout (%s) of the trigger: Flink may have taken it", c.r.Options.SavepointTimeout)), nil
		}
		// The JobManager is restarting or an old one may still lead: wait.
		out.waitFor(ConditionReasonWaitingForFlinkAPI, "to trigger the %s savepoint of job %s: %s", sp.TriggerReason, sp.JobID, c.obs.untrusted)
		return pending, nil
	}
	if fj := c.obs.flink.Job; fj == nil || fj.State != flinkclient.JobStateRunning {
		reported := "not listed"
		if fj != nil {
			reported = fj.State
		}
		// A call made before (its answer lost) may have taken effect: the trigger ID tells.
		if sp.TriggerTime != "" {
			return c.pollSavepoint(ctx, out, stop)
		}
		if fj != nil && flinkcluster.TransientFlinkState(fj.State) {
			// Flink takes savepoints of RUNNING jobs only; a job restarting (a TaskManager
			// failover) runs again, or ends, by itself: the trigger waits, within its deadline.
			out.waitFor(ConditionReasonWaitingForSavepoint, "to trigger the %s savepoint of job %s: Flink reports the job %s, and takes savepoints of RUNNING jobs only",
				sp.TriggerReason, sp.JobID, fj.State)
			return pending, nil
		}
		return c.savepointFailed(fmt.Sprintf("Flink reports the job %s, not RUNNING", reported)), nil
	}
	// The trigger ID is in the status before Flink hears of it.
	if sp.TriggerTime == "" {
		sp.TriggerTime = state.Time(c.now)
	}
	if err := c.recordedBeforeActing(); err != nil {
		return pending, err
	}
	cl, err := c.flinkClient(ctx)
	if err != nil {
		return pending, err
	}
	ctx, cancel := context.WithTimeout(ctx, flinkCallTimeout)
	defer cancel()
	var trigger string
	if stop {
		trigger, err = cl.StopWithSavepoint(ctx, sp.JobID, c.savepointRequest())
	} else {
		trigger, err = cl.TriggerSavepoint(ctx, sp.JobID, c.savepointRequest())
	}
	if err != nil {
		sp.Message = err.Error()
		c.event(corev1.EventTypeWarning, ReasonSavepointFailed, "Savepoint", "triggering the %s savepoint of job %s: %v", sp.TriggerReason, sp.JobID, err)
		out.waitFor(ConditionReasonWaitingForSavepoint, "triggering the %s savepoint of job %s (trigger %s): %v", sp.TriggerReason, sp.JobID, sp.TriggerID, err)
		return pending, nil
	}
	sp.TriggerID, sp.State, sp.Message = trigger, SavepointStateInProgress, ""
	verb := savepointKind(stop)
	c.event(corev1.EventTypeNormal, ReasonSavepointTriggered, "Savepoint", "triggered %s of job %s (%s), trigger %s", verb, sp.JobID, sp.TriggerReason, trigger)
	out.waitFor(ConditionReasonWaitingForSavepoint, "%s of job %s (trigger %s) in progress", verb, sp.JobID, trigger)
	return pending, nil
}

// pollSavepoint asks for the trigger's result. It asks whichever JobManager answers: a
// trigger ID is only known to the JobManager that took it, so an answer about it is never
// another execution's. A result Flink no longer has (expired after rest.async.store-duration,
// or the JobManager restarted) is recovered from the job's checkpoint statistics when the
// leader reports a savepoint newer than the last one known; otherwise the outcome is unknown,
// and an unknown final savepoint is never replaced by an older one silently.
func (c *cycle) pollSavepoint(ctx context.Context, out *flowOut, stop bool) (phase, error) {
	sp := c.st.Savepoint
	if out.pastDeadline(c.now, state.ParseTime(sp.TriggerTime), c.r.Options.SavepointTimeout) {
		return c.savepointUnknown(fmt.Sprintf("no result within --savepoint-timeout (%s) of its trigger: Flink may still complete it", c.r.Options.SavepointTimeout)), nil
	}
	cl, err := c.flinkClient(ctx)
	if err != nil {
		return pending, err
	}
	ctx, cancel := context.WithTimeout(ctx, flinkCallTimeout)
	defer cancel()
	st, err := cl.SavepointStatus(ctx, sp.JobID, sp.TriggerID)
	switch {
	case errors.Is(err, flinkclient.ErrNotFound):
		if loc, ok := c.recoverSavepoint(ctx, cl, stop); ok {
			return c.savepointSucceeded(loc, stop, savepointRecovered), nil
		}
		if c.obs.flink == nil {
			out.waitFor(ConditionReasonWaitingForFlinkAPI, "to recover the result of trigger %s from the leader's checkpoint statistics: %s", sp.TriggerID, c.obs.untrusted)
			return pending, nil
		}
		return c.savepointUnknown("Flink no longer knows trigger " + sp.TriggerID + " (its result expired or the JobManager restarted) and reports no newer savepoint"), nil
	case err != nil:
		if w := standing(c.obs, out.objects).wl; w == nil || w.Complete || w.Failed {
			return c.savepointUnknown("the JobManager exited before the savepoint result was read"), nil
		}
		out.waitFor(ConditionReasonWaitingForSavepoint, "reading the result of trigger %s of job %s: %v", sp.TriggerID, sp.JobID, err)
		return pending, nil
	case !st.Completed():
		out.waitFor(ConditionReasonWaitingForSavepoint, "savepoint of job %s (trigger %s) in progress", sp.JobID, sp.TriggerID)
		return pending, nil
	case !st.Succeeded():
		return c.savepointFailed(st.FailureCause), nil
	}
	return c.savepointSucceeded(st.Location, stop, ""), nil
}

// MaxClockSkew is how far Flink's clock may be behind the controller's for a savepoint that
// Flink timestamped before the recorded trigger time still to count as this trigger's
// (recoverSavepoint). It also covers the status's one-second resolution. A larger skew makes
// a recovered result unknown (SavepointRequired), never another savepoint taken for it.
const MaxClockSkew = 30 * time.Second

// recoverSavepoint reads the latest savepoint from the leader's checkpoint statistics: one
// of the trigger's job, externally addressable, not the last one already known, and
// triggered at or after the recorded trigger time (less MaxClockSkew) — a savepoint triggered
// before this trigger (a user's, or an earlier one whose result also expired) is another
// operation's, and never the final savepoint of this one. Its kind must be the trigger's too:
// within MaxClockSkew a savepoint another trigger took just before (a user's, superseded by
// this stop) would otherwise pass for a stop that was never sent (seed 1796565790140735165).
// Whether the job ended is checked before the JobManager is replaced (confirmStopEnded): a
// stop-with-savepoint whose savepoint completed may have failed to end the job.
func (c *cycle) recoverSavepoint(ctx context.Context, cl flinkclient.Client, stop bool) (string, bool) {
	sp := c.st.Savepoint
	if c.obs.flink == nil || sp.JobID != c.jobID() {
		return "", false
	}
	cps, err := cl.GetCheckpoints(ctx, sp.JobID)
	if err != nil {
		return "", false
	}
	latest := cps.LatestSavepoint()
	if latest == nil || flinkcluster.SameSavepoint(latest.ExternalPath, c.job().SavepointLocation) {
		return "", false
	}
	if since := state.ParseTime(sp.TriggerTime); since.IsZero() || time.UnixMilli(latest.TriggerTimestamp).Before(since.Add(-MaxClockSkew)) {
		c.event(corev1.EventTypeWarning, ReasonSavepointFailed, "Savepoint",
			"the latest savepoint of job %s, %s, was triggered at %s, before trigger %s (%s): it is not this trigger's result",
			sp.JobID, latest.ExternalPath, time.UnixMilli(latest.TriggerTimestamp).UTC().Format(time.RFC3339), sp.TriggerID, orNone(sp.TriggerTime))
		return "", false
	}
	if sync := latest.Type == flinkclient.CheckpointTypeSyncSavepoint; latest.Type != "" && sync != stop {
		c.event(corev1.EventTypeWarning, ReasonSavepointFailed, "Savepoint",
			"the latest savepoint of job %s, %s, is a %s: it is not the result of trigger %s (%s)",
			sp.JobID, latest.ExternalPath, latest.Type, sp.TriggerID, savepointKind(stop))
		return "", false
	}
	return latest.ExternalPath, true
}

func savepointKind(stop bool) string {
	if stop {
		return "stop-with-savepoint"
	}
	return "savepoint"
}

// stopCompleted reports whether Flink reported the current job's stop-with-savepoint
// COMPLETED, which it does only once the job ended: that confirms the job's end even when the
// JobManager, recovered or replaced since, no longer lists the job. A savepoint recovered from
// the checkpoint statistics confirms nothing of the kind.
func stopCompleted(st *v1beta1.FlinkClusterStatus) bool {
	sp, job := st.Savepoint, st.Components.Job
	return sp != nil && sp.JobID == job.ID && sp.State == SavepointStateSucceeded && sp.Message != savepointRecovered && job.FinalSavepoint
}

// savepointRecovered is the message of a savepoint found in the checkpoint statistics after
// its trigger's result expired, rather than reported COMPLETED by Flink.
const savepointRecovered = "recovered from the checkpoint statistics"

func (c *cycle) savepointSucceeded(location string, stop bool, how string) phase {
	sp := c.st.Savepoint
	job := c.job()
	sp.State, sp.Message, sp.UpdateTime = SavepointStateSucceeded, how, state.Time(c.now)
	job.SavepointLocation, job.SavepointTime, job.FinalSavepoint = location, state.Time(c.now), stop
	// The checkpoint ID belongs to the savepoint it was learnt of: the new one's is learnt anew
	// (noteSavepointCheckpointID). Reset here, where the location changes, not by comparing with
	// the reconcile's first read, which a record before acting (recordBeforeActing) moves on.
	job.SavepointCheckpointID = 0
	if u := state.ParseTime(job.UnknownSavepointTime); sp.JobID == job.ID && !u.IsZero() && !state.ParseTime(sp.TriggerTime).Before(u) {
		// Triggered no earlier than the savepoint whose outcome is unknown: this one holds
		// state at least as new.
		job.UnknownSavepointTime = ""
	}
	job.SavepointGeneration = c.fc.Spec.Job.SavepointGeneration
	c.recordSavepoint(v1beta1.SavepointRecord{
		Location: location, Time: job.SavepointTime, JobID: sp.JobID, TriggerReason: sp.TriggerReason, Final: stop,
	})
	note := fmt.Sprintf("%s savepoint of job %s taken: %s", sp.TriggerReason, sp.JobID, location)
	if how != "" {
		note += " (" + how + ")"
	}
	c.event(corev1.EventTypeNormal, ReasonSavepointSucceeded, "Savepoint", "%s", note)
	return succeeded
}

func (c *cycle) savepointFailed(msg string) phase {
	sp := c.st.Savepoint
	sp.State, sp.Message, sp.UpdateTime = SavepointStateFailed, msg, state.Time(c.now)
	c.event(corev1.EventTypeWarning, ReasonSavepointFailed, "Savepoint", "%s savepoint of job %s failed: %s", sp.TriggerReason, sp.JobID, msg)
	return failed
}

// savepointUnknown records a savepoint whose outcome cannot be learnt: it may have been taken
// (and, for a stop, have stopped the job) or not.
func (c *cycle) savepointUnknown(msg string) phase {
	sp := c.st.Savepoint
	sp.State, sp.Message, sp.UpdateTime = SavepointStateUnknown, msg, state.Time(c.now)
	c.event(corev1.EventTypeWarning, ReasonSavepointFailed, "Savepoint", "%s savepoint of job %s: outcome unknown: %s", sp.TriggerReason, sp.JobID, msg)
	return failed
}

// savepointInFlight reports whether a savepoint of the current deploy's job is requested or
// in progress.
func savepointInFlight(st *v1beta1.FlinkClusterStatus) bool {
	sp := st.Savepoint
	return sp != nil && sp.JobID != "" && sp.JobID == st.Components.Job.ID &&
		(sp.State == SavepointStateRequested || sp.State == SavepointStateInProgress)
}

// scheduledReason reports whether a trigger reason is one of spec.job's own savepoints.
func scheduledReason(reason string) bool {
	return reason == flinkcluster.SavepointReasonGeneration || reason == flinkcluster.SavepointReasonScheduled
}

// specSavepoint takes the savepoints spec.job asks for while the job runs, with the
// flink-on-k8s-operator's semantics (flinkcluster.NextSavepoint): on request, when
// savepointGeneration goes above status.components.job.savepointGeneration (which follows
// once the savepoint is taken), and on schedule, every autoSavepointSeconds. Like the
// operator it needs spec.job.savepointsDir, and it starts none while another savepoint of the
// job is in flight, during an update or a cancel (whose stop-with-savepoint comes first), or
// while Flink does not report the job RUNNING; the job keeps running throughout.
func (c *cycle) specSavepoint(ctx context.Context) error {
	job, sp := c.job(), c.st.Savepoint
	active := job.State == v1beta1.JobStateRunning && !c.updatePending() && !c.cancelPending() && !c.finished()
	if savepointInFlight(c.st) {
		if !scheduledReason(sp.TriggerReason) || !active {
			return nil
		}
		_, err := c.driveSavepoint(ctx, &c.out.flowOut, false)
		return err
	}
	spec := c.fc.Spec.Job
	if !active || spec == nil || spec.SavepointsDir == nil || strings.TrimSpace(*spec.SavepointsDir) == "" || controlInFlight(c.st.Control) {
		return nil
	}
	in := flinkcluster.SavepointSchedule{Spec: spec, Job: job}
	if sp != nil && sp.JobID == job.ID && (sp.State == SavepointStateFailed || sp.State == SavepointStateUnknown) {
		in.FailedReason = sp.TriggerReason
		in.FailedAt = parseTime(sp.UpdateTime)
		if in.FailedAt.IsZero() {
			in.FailedAt = parseTime(sp.RequestTime)
		}
	}
	reason, next := flinkcluster.NextSavepoint(in, c.now)
	if reason == "" {
		if !next.IsZero() {
			c.out.after(next.Sub(c.now))
		}
		return nil
	}
	if !flinkReportsRunning(c.obs) {
		// Due, but Flink does not report the job RUNNING (yet): look again at the next poll.
		c.poll()
		return nil
	}
	c.requestSavepoint(reason)
	_, err := c.driveSavepoint(ctx, &c.out.flowOut, false)
	return err
}

// recordSavepoint adds a savepoint to status.savepointHistory and trims it.
func (c *cycle) recordSavepoint(r v1beta1.SavepointRecord) {
	h := c.st.SavepointHistory
	if n := len(h); n > 0 && flinkcluster.SameSavepoint(h[n-1].Location, r.Location) {
		return // the same savepoint, recovered again
	}
	c.st.SavepointHistory = append(h, r)
	c.trimHistory()
}

// trimHistory keeps status.savepointHistory at flinkcluster.MaxSavepointHistory records,
// oldest dropped first, but keeps a savepoint spec.job.savepointsToKeep asks to dispose of
// until its disposal was asked for or failed — up to twice the bound, past which the oldest
// is dropped with a Warning Event that names it (it is then never disposed of: the controller
// forgets it).
func (c *cycle) trimHistory() {
	h := c.st.SavepointHistory
	disposing := c.fc.Spec.Job != nil && c.fc.Spec.Job.SavepointsToKeep != nil
	for len(h) > flinkcluster.MaxSavepointHistory {
		awaiting := disposing && h[0].Disposal != v1beta1.SavepointDisposalFailed && !c.protectedSavepoint(h[0].Location)
		if awaiting && len(h) <= 2*flinkcluster.MaxSavepointHistory {
			break
		}
		if awaiting {
			c.event(corev1.EventTypeWarning, ReasonSavepointDisposalFailed, "Savepoint",
				"savepoint %s dropped from the history before Flink disposed of it: delete it from the savepoint storage by hand", h[0].Location)
		}
		h = h[1:]
	}
	c.st.SavepointHistory = h
}

// protectedSavepoints are the savepoints a deploy may still restore, which are never disposed
// of: the latest, the one the current deploy started from, spec.job.fromSavepoint and the
// restore annotation's, in whatever spelling they name them (flinkcluster.SameSavepoint).
func (c *cycle) protectedSavepoints() []string {
	job := c.job()
	out := []string{job.SavepointLocation, job.FromSavepoint}
	if j := c.fc.Spec.Job; j != nil && j.FromSavepoint != nil {
		out = append(out, *j.FromSavepoint)
	}
	if choice := c.restoreChoice(); choice != nil {
		out = append(out, *choice)
	}
	return out
}

func (c *cycle) protectedSavepoint(loc string) bool {
	for _, p := range c.protectedSavepoints() {
		if strings.TrimSpace(p) != "" && flinkcluster.SameSavepoint(p, loc) {
			return true
		}
	}
	return false
}

// disposeSavepoints disposes, through Flink's savepoint disposal, of the savepoints of the
// history that spec.job.savepointsToKeep no longer keeps (flinkcluster.Disposable), one
// request per reconcile, and follows the requests made: a savepoint disposed of leaves the
// history with a Normal Event; a failed disposal (or one whose result Flink forgot) stays in
// the history as Failed with a Warning Event and is not asked again — the savepoint may still
// be there. It needs a JobManager that answers (a trusted one: disposal runs in its
// Dispatcher); without one it waits.
func (c *cycle) disposeSavepoints(ctx context.Context) error {
	h := c.st.SavepointHistory
	if len(h) == 0 || c.obs.flink == nil {
		return nil
	}
	todo := flinkcluster.Disposable(h, c.fc.Spec.Job, c.protectedSavepoints()...)
	pending := false
	for i := range h {
		pending = pending || h[i].Disposal == v1beta1.SavepointDisposalInProgress
	}
	if len(todo) == 0 && !pending {
		return nil
	}
	cl, err := c.flinkClient(ctx)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, flinkCallTimeout)
	defer cancel()
	kept := h[:0:0]
	for i := range h {
		r := h[i]
		if r.Disposal != v1beta1.SavepointDisposalInProgress {
			kept = append(kept, r)
			continue
		}
		st, err := cl.DisposalStatus(cctx, r.DisposalTriggerID)
		switch {
		case errors.Is(err, flinkclient.ErrNotFound):
			r.Disposal, r.DisposalMessage = v1beta1.SavepointDisposalFailed, "Flink no longer knows disposal trigger "+r.DisposalTriggerID+" (its result expired or another JobManager answers): the savepoint may still be there"
			c.event(corev1.EventTypeWarning, ReasonSavepointDisposalFailed, "Savepoint", "disposal of savepoint %s: outcome unknown: %s", r.Location, r.DisposalMessage)
		case err != nil:
			c.poll()
		case !st.Completed():
			c.poll()
		case !st.Succeeded():
			r.Disposal, r.DisposalMessage = v1beta1.SavepointDisposalFailed, st.FailureCause
			c.event(corev1.EventTypeWarning, ReasonSavepointDisposalFailed, "Savepoint", "disposal of savepoint %s failed: %s", r.Location, st.FailureCause)
		default:
			c.event(corev1.EventTypeNormal, ReasonSavepointDisposed, "Savepoint", "disposed of savepoint %s (%s of job %s, taken %s): spec.job.savepointsToKeep is %d",
				r.Location, r.TriggerReason, r.JobID, r.Time, *c.fc.Spec.Job.SavepointsToKeep)
			continue
		}
		kept = append(kept, r)
	}
	c.st.SavepointHistory = kept
	// One new disposal per reconcile: the index is read again from the trimmed history.
	if todo = flinkcluster.Disposable(kept, c.fc.Spec.Job, c.protectedSavepoints()...); len(todo) > 0 {
		r := &c.st.SavepointHistory[todo[0]]
		trigger, err := cl.DisposeSavepoint(cctx, r.Location)
		if err != nil {
			c.event(corev1.EventTypeWarning, ReasonSavepointDisposalFailed, "Savepoint", "asking Flink to dispose of savepoint %s: %v", r.Location, err)
			c.poll()
			return nil
		}
		r.Disposal, r.DisposalTriggerID = v1beta1.SavepointDisposalInProgress, trigger
		c.poll()
	}
	c.trimHistory()
	return nil
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}
	}
	return t
}
