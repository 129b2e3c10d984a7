// Package flinkcluster is the domain package at the bottom: what a FlinkCluster means, decided
// once for the admission policy and the controller alike (lifecycle and Flink configuration
// predicates, the upgrade decision PlanUpgrade, the revision rules RevisionHash and
// RedeployNeeded), so that a dry run's upgrade plan and the controller never disagree. It
// imports only the API types; policy and the controller import it, never each other.
package flinkcluster
