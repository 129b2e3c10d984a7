package builder_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

func TestMakeFlinkClusterIsMinimal(t *testing.T) {
	fc := builder.MakeFlinkCluster("wordcount", "ns").Obj()
	if fc.Name != "wordcount" || fc.Namespace != "ns" || fc.Kind != v1beta1.Kind || fc.APIVersion != v1beta1.GroupVersion.String() {
		t.Errorf("metadata: got %s/%s %s %s", fc.Namespace, fc.Name, fc.APIVersion, fc.Kind)
	}
	if fc.Spec.FlinkVersion != "2.2.1" || fc.Spec.Image.Name != "flink:2.2.1" {
		t.Errorf("version and image: got %q, %q", fc.Spec.FlinkVersion, fc.Spec.Image.Name)
	}
	if !fc.Spec.IsApplicationMode() || fc.Spec.Job.ClassName == nil || fc.Spec.Job.SavepointsDir == nil || fc.Spec.Job.JarFile != nil {
		t.Errorf("job: got %+v", fc.Spec.Job)
	}
	if fc.Spec.JobManager != nil || fc.Spec.TaskManager != nil {
		t.Error("jobManager and taskManager must be left unset")
	}
}

func TestObjReturnsIndependentCopies(t *testing.T) {
	w := builder.MakeFlinkCluster("a", "ns").FlinkProperty("k", "v")
	first := w.Obj()
	w.FlinkProperty("k", "changed").DeploymentType(v1beta1.JobManagerDeploymentTypeDeployment)
	if first.Spec.FlinkProperties["k"] != "v" || first.Spec.JobManager != nil {
		t.Error("a setter called after Obj changed the returned object")
	}
	clone := w.Clone().SessionCluster()
	if w.Obj().Spec.Job == nil || clone.Obj().Spec.Job != nil {
		t.Error("Clone does not branch off independently")
	}
}

func TestSettersCreateWhatTheyNeed(t *testing.T) {
	fc := builder.MakeFlinkCluster("a", "ns").SessionCluster().
		Grace(90).TaskManagerReplicas(2).Parallelism(4).JobStatus(v1beta1.JobStateRunning).
		StatusSavepointGeneration(3).UserControl(v1beta1.ControlNameSavepoint).HA().Obj()
	switch {
	case fc.Spec.JobManager == nil || *fc.Spec.JobManager.TerminationGracePeriodSeconds != 90:
		t.Error("Grace")
	case fc.Spec.TaskManager == nil || *fc.Spec.TaskManager.Replicas != 2:
		t.Error("TaskManagerReplicas")
	case fc.Spec.Job == nil || *fc.Spec.Job.Parallelism != 4:
		t.Error("Parallelism after SessionCluster creates a job")
	case fc.Status.Components.Job.State != v1beta1.JobStateRunning || fc.Status.Components.Job.SavepointGeneration != 3:
		t.Error("job status")
	case fc.Annotations[v1beta1.ControlAnnotation] != "savepoint":
		t.Error("UserControl")
	case fc.Spec.FlinkProperties["high-availability.type"] != "kubernetes" || fc.Spec.FlinkProperties["high-availability.storageDir"] != builder.HAStorageDir:
		t.Error("HA")
	}
}

func TestFixturesAreFreshAndNamed(t *testing.T) {
	a, b := builder.Fixtures(), builder.Fixtures()
	names := map[string]bool{}
	for i := range a {
		if a[i].Obj == b[i].Obj {
			t.Errorf("%s: Fixtures returns shared objects", a[i].Name)
		}
		if names[a[i].Name] {
			t.Errorf("duplicate fixture name %q", a[i].Name)
		}
		names[a[i].Name] = true
	}
}

func TestPortSettersOfBothRoles(t *testing.T) {
	metrics := v1beta1.NamedPort{Name: "metrics", ContainerPort: 9249}
	jmx := v1beta1.NamedPort{Name: "jmx", ContainerPort: 9999}
	fc := builder.MakeFlinkCluster("a", "ns").
		JobManagerPorts(6123, 6124, 6125, 8081).TaskManagerPorts(6121, 6122, 6125).
		JobManagerExtraPorts(metrics).JobManagerExtraPorts(jmx).TaskManagerExtraPorts(jmx, metrics).Obj()
	assert.Equal(t, v1beta1.JobManagerPorts{RPC: ptr.To[int32](6123), Blob: ptr.To[int32](6124), Query: ptr.To[int32](6125), UI: ptr.To[int32](8081)}, fc.Spec.JobManager.Ports)
	assert.Equal(t, v1beta1.TaskManagerPorts{Data: ptr.To[int32](6121), RPC: ptr.To[int32](6122), Query: ptr.To[int32](6125)}, fc.Spec.TaskManager.Ports)
	assert.Equal(t, []v1beta1.NamedPort{metrics, jmx}, fc.Spec.JobManager.ExtraPorts, "a second call appends after the first")
	assert.Equal(t, []v1beta1.NamedPort{jmx, metrics}, fc.Spec.TaskManager.ExtraPorts, "one role's ports stay out of the other's")
}
