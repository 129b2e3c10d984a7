package resources

import (
	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// Revision names a cluster's spec revision "<name>-<hash>" (flinkcluster.RevisionHash), which
// leaves out the fields that only steer the controller, so that changing them is no update.
func Revision(fc *v1beta1.FlinkCluster) (string, error) {
	h, err := flinkcluster.RevisionHash(&fc.Spec)
	if err != nil {
		return "", err
	}
	return fc.Name + "-" + h, nil
}

// Deploy is one deploy of the job: its revision, job ID and savepoint. A deploy that does not
// resume from HA gets a new job ID, so no earlier deploy's job result or graph is taken for it
// (FLINK-27569).
type Deploy struct {
	Revision      string
	JobID         string
	FromSavepoint string
}
