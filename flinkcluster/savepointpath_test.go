package flinkcluster_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

func TestSameSavepoint(t *testing.T) {
	const sp = "s3://bucket/savepoints/savepoint-3f1a2b-0123456789ab"
	tests := []struct {
		name string
		a, b string
		want bool
	}{
		{name: "same: one spelling", a: sp, b: sp, want: true},
		{name: "same: directory and its _metadata file", a: sp, b: sp + "/_metadata", want: true},
		{name: "same: directory with a trailing slash", a: sp, b: sp + "/", want: true},
		{name: "same: _metadata file and the directory with a trailing slash", a: sp + "/_metadata", b: sp + "/", want: true},
		{name: "same: surrounding blanks", a: " " + sp + "\n", b: sp, want: true},
		{name: "same: repeated slashes in the path", a: "s3://bucket/savepoints//savepoint-1", b: "s3://bucket/savepoints/savepoint-1", want: true},
		{name: "same: dot segments", a: "s3://bucket/savepoints/./x/../savepoint-1", b: "s3://bucket/savepoints/savepoint-1", want: true},
		{name: "same: backslashes are separators", a: `s3://bucket/savepoints\savepoint-1`, b: "s3://bucket/savepoints/savepoint-1", want: true},
		{name: "same: file:/// and Flink's file:/", a: "file:///savepoints/savepoint-1", b: "file:/savepoints/savepoint-1", want: true},
		{name: "same: file:/// with a trailing slash and Flink's file:/", a: "file:///savepoints/savepoint-1/", b: "file:/savepoints/savepoint-1", want: true},
		{name: "same: file:/// _metadata and Flink's file:/", a: "file:///savepoints/savepoint-1/_metadata", b: "file:/savepoints/savepoint-1", want: true},
		{name: "same: scheme in another case", a: "S3://bucket/savepoints/savepoint-1", b: "s3://bucket/savepoints/savepoint-1", want: true},
		{name: "same: host in another case", a: "hdfs://NameNode:8020/savepoints/savepoint-1", b: "hdfs://namenode:8020/savepoints/savepoint-1", want: true},
		{name: "same: blank and empty", a: " ", b: "", want: true},
		{name: "different: other bucket", a: "s3://bucket/savepoints/savepoint-1", b: "s3://other/savepoints/savepoint-1", want: false},
		{name: "different: no bucket", a: "s3://bucket/savepoints/savepoint-1", b: "s3:/savepoints/savepoint-1", want: false},
		{name: "different: other scheme", a: "s3://bucket/savepoints/savepoint-1", b: "gs://bucket/savepoints/savepoint-1", want: false},
		{name: "different: a file:// authority is no path segment", a: "file://savepoints/savepoint-1", b: "file:/savepoints/savepoint-1", want: false},
		{name: "different: path in another case", a: "s3://bucket/savepoints/Savepoint-1", b: "s3://bucket/savepoints/savepoint-1", want: false},
		{name: "different: user information in another case", a: "hdfs://Flink@nn/savepoints/savepoint-1", b: "hdfs://flink@nn/savepoints/savepoint-1", want: false},
		{name: "different: another savepoint of the same directory", a: "s3://bucket/savepoints/savepoint-1", b: "s3://bucket/savepoints/savepoint-2", want: false},
		{name: "different: the savepoints directory is not its savepoint", a: "s3://bucket/savepoints", b: "s3://bucket/savepoints/savepoint-1", want: false},
		{name: "different: another file than _metadata", a: "s3://bucket/savepoints/savepoint-1/other", b: "s3://bucket/savepoints/savepoint-1", want: false},
		{name: "different: a scheme-less path is resolved by fs.default-scheme", a: "/savepoints/savepoint-1", b: "file:/savepoints/savepoint-1", want: false},
		{name: "different: percent-encoding is not decoded", a: "s3://bucket/save%20points/savepoint-1", b: "s3://bucket/save points/savepoint-1", want: false},
		{name: "different: a location and none", a: sp, b: "", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, flinkcluster.SameSavepoint(tt.a, tt.b), "SameSavepoint(%q, %q)", tt.a, tt.b)
			assert.Equal(t, tt.want, flinkcluster.SameSavepoint(tt.b, tt.a), "SameSavepoint(%q, %q)", tt.b, tt.a)
		})
	}
}

func TestSavepointKey(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{name: "Flink's spelling of a local path", in: "file:///savepoints/savepoint-1/", want: "file:/savepoints/savepoint-1"},
		{name: "an object store keeps its bucket", in: "s3://bucket/savepoints/savepoint-1/_metadata", want: "s3://bucket/savepoints/savepoint-1"},
		{name: "a bucket without a path", in: "s3://Bucket", want: "s3://bucket"},
		{name: "blank: none", in: "  ", want: ""},
		{name: "a relative path whose first segment holds a colon cannot read as a scheme", in: "./a:b/savepoint-1", want: "./a:b/savepoint-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, flinkcluster.SavepointKey(tt.in))
		})
	}
}

// A savepoint of the history named by a deploy in another spelling is still protected.
func TestDisposableKeepsAProtectedSavepointSpeltOtherwise(t *testing.T) {
	history := []v1beta1.SavepointRecord{
		{Location: "file:/savepoints/savepoint-1"},
		{Location: "file:/savepoints/savepoint-2"},
		{Location: "file:/savepoints/savepoint-3"},
	}
	keep := &v1beta1.JobSpec{SavepointsToKeep: ptr.To[int32](1)}
	tests := []struct {
		name      string
		protected string
		want      []int
	}{
		{name: "its _metadata file", protected: "file:/savepoints/savepoint-1/_metadata", want: []int{1}},
		{name: "file:/// with a trailing slash", protected: "file:///savepoints/savepoint-1/", want: []int{1}},
		{name: "another savepoint protects none of these", protected: "file:/savepoints/savepoint-9", want: []int{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, flinkcluster.Disposable(history, keep, tt.protected))
		})
	}
}

// An update that names the recorded fromSavepoint in another spelling changes nothing to
// restore: restoring it would rewind the job to that old savepoint.
func TestUpdateRestoreOfTheRecordedSavepointSpeltOtherwise(t *testing.T) {
	j := &v1beta1.JobStatus{SpecFromSavepoint: "s3://sp/first"}
	for _, from := range []string{"s3://sp/first/", "s3://sp/first/_metadata", "S3://sp//first"} {
		t.Run(from, func(t *testing.T) {
			got, ok := flinkcluster.UpdateRestore(j, &v1beta1.JobSpec{FromSavepoint: ptr.To(from)})
			assert.False(t, ok, "restores %q", got)
		})
	}
}

// FuzzSameSavepoint checks that SameSavepoint never panics, whatever the strings, and that
// it is reflexive and symmetric.
func FuzzSameSavepoint(f *testing.F) {
	for _, s := range [][2]string{
		{"file:///savepoints/savepoint-1/", "file:/savepoints/savepoint-1"},
		{"s3://bucket/sp/_metadata", "s3://bucket/sp"},
		{"hdfs://u@NN:8020//a/./b/../c", "hdfs://u@nn:8020/a/c"},
		{"", " "},
		{"://", ":"},
		{"./a:b/_metadata", "a:b"},
		{`\\host\share`, "//host/share"},
		{"0 \\", "0"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if !flinkcluster.SameSavepoint(a, a) {
			t.Fatalf("SameSavepoint(%q, %q) is false", a, a)
		}
		if flinkcluster.SameSavepoint(a, b) != flinkcluster.SameSavepoint(b, a) {
			t.Fatalf("SameSavepoint(%q, %q) is not SameSavepoint(%q, %q)", a, b, b, a)
		}
	})
}
