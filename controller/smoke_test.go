package controller_test

import (
	"testing"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

func TestSmoke(t *testing.T) {
	for _, mode := range []v1beta1.JobManagerDeploymentType{v1beta1.JobManagerDeploymentTypeJob, v1beta1.JobManagerDeploymentTypeDeployment} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, mode, nil)
			h.runJob()
		})
	}
}
