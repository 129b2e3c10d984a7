// Package e2e holds the end-to-end tests: a real kube-apiserver and etcd (internal/test/testenv)
// with the CRD and both webhook configurations, served in-process by the same code as
// `flink-admission dev`, driven with kubectl as a user would; plus the built binary itself
// (`flink-admission dev`, and `flink-admission serve` in files mode while its certificate is
// replaced).
//
//	KUBEBUILDER_ASSETS="$(hack/envtest-binaries.sh)" go test ./e2e/
package e2e
