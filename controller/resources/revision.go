package resources

import (
	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// Revision names the spec revision of a cluster: "<name>-<hash>". The hash is
// flinkcluster.RevisionHash: fields that only steer the controller (cancel requests, savepoint
// triggers and disposal, cleanup and restart policies, the savepoint age limit, what is applied
// in place) are left out, so changing them is not an update and never restarts the job, and
// the admission policy's upgrade plan tells a redeploy by the same fields.
func Revision(fc *v1beta1.FlinkCluster) (string, error) {
	h, err := flinkcluster.RevisionHash(&fc.Spec)
	if err != nil {
		return "", err
	}
	return fc.Name + "-" + h, nil
}

// Deploy is one deploy of the job: the spec revision its objects are built from, the job ID
// it runs under and the savepoint it restores. Every deploy that does not resume from HA
// metadata gets a new job ID, so that no job result or job graph of an earlier deploy is ever
// taken for it (FLINK-27569), and a JobManager that recovers from HA keeps the ID.
type Deploy struct {
	Revision      string
	JobID         string
	FromSavepoint string
}
