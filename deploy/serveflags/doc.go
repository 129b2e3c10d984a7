// Package serveflags holds no code: its test checks that the Deployment of every kustomize
// overlay passes arguments that `flink-admission serve` accepts. It is a package of its own
// so that the manifest tests in package deploy do not compile the whole server.
package serveflags
