package containerargs_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-admission/flink-admission/internal/containerargs"
)

func TestExpand(t *testing.T) {
	fromCM := func(cm, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: "RESTORE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: cm}, Key: key}}}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "wc-configmap"}, Data: map[string]string{"path": "s3://sp/1"}}
	tests := []struct {
		name string
		env  []corev1.EnvVar
		cm   *corev1.ConfigMap
		want []string
	}{
		{name: "a literal variable is replaced", env: []corev1.EnvVar{{Name: "RESTORE", Value: "x"}}, cm: cm,
			want: []string{"--fromSavepoint", "x"}},
		{name: "a ConfigMap entry is read as it is now", env: []corev1.EnvVar{fromCM("wc-configmap", "path")}, cm: cm,
			want: []string{"--fromSavepoint", "s3://sp/1"}},
		{name: "an entry of another ConfigMap stays unresolved", env: []corev1.EnvVar{fromCM("other", "path")}, cm: cm,
			want: []string{"--fromSavepoint", "$(RESTORE)"}},
		{name: "a missing entry stays unresolved", env: []corev1.EnvVar{fromCM("wc-configmap", "gone")}, cm: cm,
			want: []string{"--fromSavepoint", "$(RESTORE)"}},
		{name: "no ConfigMap leaves ConfigMap variables unresolved", env: []corev1.EnvVar{fromCM("wc-configmap", "path")},
			want: []string{"--fromSavepoint", "$(RESTORE)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &corev1.Container{Env: tc.env, Args: []string{"--fromSavepoint", "$(RESTORE)"}}
			assert.Equal(t, tc.want, containerargs.Expand(c, tc.cm))
		})
	}
}
