package realflink

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestImageVersionIsTheTagsLeadingRelease(t *testing.T) {
	for image, want := range map[string]string{
		"flink:2.2.1":                          "2.2.1",
		"flink:2.3.0-java17":                   "2.3.0",
		"registry:5000/flink:2.2.1-scala_2.12": "2.2.1",
	} {
		got, err := imageVersion(image)
		require.NoError(t, err, image)
		assert.Equal(t, want, got, image)
	}
	for _, image := range []string{"flink", "flink:latest", "registry:5000/flink", "flink:2.2"} {
		_, err := imageVersion(image)
		assert.Error(t, err, image)
	}
}

func TestImagePathsMapTheImagesFilesToTheContainersHome(t *testing.T) {
	assert.Equal(t, []string{"--jars", "/h/usrlib/j.jar", "--report", "/tmp/r"},
		imagePaths([]string{"--jars", "/opt/flink/usrlib/j.jar", "--report", "/tmp/r"}, "/h"))
}

func TestPodConfigurationBindsThePodsIPAndKeepsTheClustersKeys(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "wc-taskmanager-0", Namespace: "ns"}, Status: corev1.PodStatus{PodIP: "127.1.0.7"}}
	conf := podConfiguration(map[string]any{"taskmanager.numberOfTaskSlots": 2, "rest.address": "svc"}, pod, "taskmanager", "/h", "/h/kubeconfig")
	assert.Equal(t, "127.1.0.7", conf["taskmanager.host"])
	assert.Equal(t, "wc-taskmanager-0", conf["taskmanager.resource-id"])
	assert.Equal(t, 2, conf["taskmanager.numberOfTaskSlots"])
	assert.Equal(t, "/h/kubeconfig", conf["kubernetes.config.file"])
	assert.True(t, strings.HasPrefix(conf["io.tmp.dirs"].(string), "/h/"), "temporary files stay in the container's directory")
	jm := podConfiguration(map[string]any{"rest.address": "svc"}, pod, "jobmanager", "/h", "/h/kubeconfig")
	assert.Equal(t, "127.1.0.7", jm["rest.bind-address"])
	assert.Equal(t, "127.1.0.7", jm["rest.address"])
}

func TestServiceTransportReachesAReadyPodAtTheTargetPort(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "wc-jobmanager", Namespace: "ns"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"component": "jobmanager"},
		Ports:    []corev1.ServicePort{{Port: 8081, TargetPort: intstr.FromInt32(18081)}},
	}}
	pod := func(name, ip string, ready corev1.ConditionStatus, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"component": "jobmanager"}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}}}
		if deleting {
			p.Finalizers = []string{"x"}
		}
		return p
	}
	old := pod("old", "127.1.0.1", corev1.ConditionTrue, true)
	cl := fake.NewClientBuilder().WithObjects(svc, old,
		pod("starting", "127.1.0.2", corev1.ConditionFalse, false),
		pod("ready", "127.1.0.3", corev1.ConditionTrue, false),
	).Build()
	// Its finalizer keeps the deleted pod, terminating.
	require.NoError(t, cl.Delete(context.Background(), old))
	tr := &ServiceTransport{Reader: cl}
	addr, err := tr.resolve(context.Background(), "wc-jobmanager.ns.svc:8081")
	require.NoError(t, err)
	assert.Equal(t, "127.1.0.3:18081", addr, "neither the terminating pod nor the unready one")

	_, err = tr.resolve(context.Background(), "missing.ns.svc:8081")
	assert.Error(t, err, "no such Service")
	_, err = tr.resolve(context.Background(), "wc-jobmanager.ns.svc:9999")
	assert.ErrorContains(t, err, "connection refused", "no such port")
}

// Flink 1.x reads flink-conf.yaml line by line ("key: value"), so a quoted value keeps its
// quotes: rest.port "6123" failed to parse as a number in Flink 1.20.
func TestConfigurationFileQuotesOnlyStandardYAML(t *testing.T) {
	conf := map[string]any{"rest.port": 6123, "state.savepoints.dir": "file:/s"}
	legacy := t.TempDir()
	require.NoError(t, writeConfiguration(legacy, conf, true))
	b, err := os.ReadFile(filepath.Join(legacy, "flink-conf.yaml"))
	require.NoError(t, err)
	assert.Equal(t, "rest.port: 6123\nstate.savepoints.dir: file:/s\n", string(b))

	standard := t.TempDir()
	require.NoError(t, writeConfiguration(standard, conf, false))
	b, err = os.ReadFile(filepath.Join(standard, "config.yaml"))
	require.NoError(t, err)
	assert.Equal(t, "rest.port: \"6123\"\nstate.savepoints.dir: file:/s\n", string(b))

	assert.ErrorContains(t, writeConfiguration(t.TempDir(), map[string]any{"k": "a\nb"}, true), "spans lines")
}
