// Package charts holds the Helm charts of flink-admission (charts/flink-admission) and their
// tests, which use Helm's Go library: lint, render, the rendered objects against the
// kustomize overlays', and installs on a real API server. No Go code of the program lives
// here.
package charts
