// Package simulation drives the controller's reconcile against a model of Kubernetes (the
// controller-runtime fake client plus the Deployment, Job and garbage-collection controllers,
// the kubelet and lost nodes) and a model of Flink (JobManager processes with HA leadership
// through the HA ConfigMaps, the job graph store, the job result store, savepoint triggers
// whose results expire, checkpoint statistics and the Flink 2.3 application), over random
// sequences of events, and checks the issue-8 invariants after every reconcile. Its tests
// need no API server.
package simulation
