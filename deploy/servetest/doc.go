// Package servetest holds no code: its tests check the install manifests against the real
// `flink-admission serve`. The overlays' container arguments must parse and validate with
// the binary's flag set, and the binary, run as the overlay's service account on a real API
// server, must never be refused by the overlay's RBAC. It is a package of its own so that the
// manifest tests in package deploy do not compile the whole server.
package servetest
