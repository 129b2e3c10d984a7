// Package state derives a FlinkCluster's job and cluster states from what the controller
// observed. Every function is pure, so the lifecycle rules are tested with tables and a fixed
// clock, without an API server.
package state
