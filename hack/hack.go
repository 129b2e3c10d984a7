// Package hack holds the scripts and small programs that build the project's tools and
// release files (hack/image, hack/installer). It embeds envtest-binaries.sh, so that
// `flink-admission dev` can build kube-apiserver and etcd from whatever directory it runs in.
package hack

import _ "embed"

// EnvtestBinariesScript is hack/envtest-binaries.sh: it builds kube-apiserver and etcd from
// the Go module proxy (once, cached) and prints the directory that holds them.
//
//go:embed envtest-binaries.sh
var EnvtestBinariesScript string
