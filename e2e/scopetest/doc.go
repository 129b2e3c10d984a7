// Package scopetest (under e2e: it checks the admission policy and the controller together) runs the controller the way deploy/overlays/scoped installs it — its
// --watch-namespaces and --cluster-selector, under its Roles, as its ServiceAccount — on the
// real control plane (testenv.StartControlPlane, with the webhooks and simulated Flink on
// the JobManager pods), beside a stand-in for the flink-on-k8s-operator, and checks that clusters
// outside the scope get nothing and that a namespace moves from the operator to the
// controller as docs/install.md says. It holds tests only.
package scopetest
