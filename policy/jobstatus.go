package policy

import (
	"strings"
	"time"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// The job-state predicates the user-control and job-update rules are written in. They are
// the controller's own (package lifecycle), so the webhook judges against the controller
// that ships.

// jobStopped reports whether the job has ended, whichever way.
func jobStopped(j *v1beta1.JobStatus) bool { return flinkcluster.Stopped(j) }

// jobTerminated reports whether the job of the cluster spec has ended and the controller will
// not restart it. The restart is the controller's own decision for the cluster's JobManager
// deployment type: with a JobManager Deployment a failed job is never restored from a
// savepoint, whatever spec.job.restartPolicy says.
func jobTerminated(j *v1beta1.JobStatus, spec *v1beta1.FlinkClusterSpec) bool {
	return jobStopped(j) && !flinkcluster.ShouldRestart(spec.GetDeploymentType(), j, spec.Job)
}

// jobUpdateReady reports whether the job can be updated now without taking a savepoint
// first.
func jobUpdateReady(j *v1beta1.JobStatus, spec *v1beta1.JobSpec, now time.Time) bool {
	return flinkcluster.UpdateReady(j, spec, now)
}

// isBlank reports whether s is nil or only white space.
func isBlank(s *string) bool {
	return s == nil || strings.TrimSpace(*s) == ""
}

// isEmpty reports whether s is nil or "".
func isEmpty(s *string) bool {
	return s == nil || *s == ""
}

// isTrue reports whether b is set and true.
func isTrue(b *bool) bool {
	return b != nil && *b
}
