package celrules

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// TestDefaultsMatchCRD checks that the accessors of package v1beta1 read an unset field as
// the CRD's structural default of that field: the API server and the Go code can never
// disagree on what an unset field means.
func TestDefaultsMatchCRD(t *testing.T) {
	obj := map[string]any{
		"apiVersion": v1beta1.GroupVersion.String(),
		"kind":       v1beta1.Kind,
		"metadata":   map[string]any{"name": "defaults", "namespace": "default"},
		"spec": map[string]any{
			"jobManager":   map[string]any{"ports": map[string]any{}},
			"taskManager":  map[string]any{"ports": map[string]any{}},
			"hadoopConfig": map[string]any{"configMapName": "hadoop"},
			"job":          map[string]any{"cleanupPolicy": map[string]any{}},
		},
	}
	validator(t).Default(obj)
	fc := &v1beta1.FlinkCluster{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, fc); err != nil {
		t.Fatal(err)
	}
	var (
		jm  *v1beta1.JobManagerSpec
		tm  *v1beta1.TaskManagerSpec
		hc  *v1beta1.HadoopConfig
		cp  *v1beta1.CleanupPolicy
		s   = &fc.Spec
		i32 = func(p *int32) any {
			if p == nil {
				return nil
			}
			return *p
		}
	)
	rpc, blob, query, ui := jm.GetPorts()
	data, tmRPC, tmQuery := tm.GetPorts()
	for _, c := range []struct {
		field     string
		crd, want any
	}{
		{"spec.jobManager.replicas", i32(s.JobManager.Replicas), jm.GetReplicas()},
		{"spec.jobManager.ports.rpc", i32(s.JobManager.Ports.RPC), rpc},
		{"spec.jobManager.ports.blob", i32(s.JobManager.Ports.Blob), blob},
		{"spec.jobManager.ports.query", i32(s.JobManager.Ports.Query), query},
		{"spec.jobManager.ports.ui", i32(s.JobManager.Ports.UI), ui},
		{"spec.taskManager.replicas", i32(s.TaskManager.Replicas), tm.GetReplicas()},
		{"spec.taskManager.ports.data", i32(s.TaskManager.Ports.Data), data},
		{"spec.taskManager.ports.rpc", i32(s.TaskManager.Ports.RPC), tmRPC},
		{"spec.taskManager.ports.query", i32(s.TaskManager.Ports.Query), tmQuery},
		{"spec.taskManager.deploymentType", s.TaskManager.DeploymentType, tm.GetDeploymentType()},
		{"spec.hadoopConfig.mountPath", s.HadoopConfig.MountPath, hc.GetMountPath()},
		{"spec.job.cleanupPolicy.afterJobSucceeds", s.Job.CleanupPolicy.AfterJobSucceeds, cp.GetAfterJobSucceeds()},
		{"spec.job.cleanupPolicy.afterJobFails", s.Job.CleanupPolicy.AfterJobFails, cp.GetAfterJobFails()},
		{"spec.job.cleanupPolicy.afterJobCancelled", s.Job.CleanupPolicy.AfterJobCancelled, cp.GetAfterJobCancelled()},
	} {
		if c.crd != c.want {
			t.Errorf("%s: the CRD defaults %v (%T), the accessor reads an unset field as %v (%T)", c.field, c.crd, c.crd, c.want, c.want)
		}
	}
}
