// Package flinkcluster is the domain package at the bottom: what a FlinkCluster means,
// decided once for the admission policy and the controller alike. It holds the job
// lifecycle predicates (is the job active, stopped, restarted, ready for an update) and
// the Flink configuration predicates (is high availability on, which Flink version, which
// memory model), and the decisions both sides need: how an update carries the job's state
// (PlanUpgrade) and which changes make a new revision (RevisionHash, RedeployNeeded), so that
// a dry run's upgrade plan and the controller never disagree. It imports only the API
// types, so that package policy never imports from the controller and the controller never
// from policy; both import this one. The defaults' accessors (GetReplicas, GetPorts,
// GetDeploymentType, ...) are methods of the API types themselves, in package v1beta1.
package flinkcluster
