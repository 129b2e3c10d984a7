//go:build !long

package main

import v1 "github.com/google/go-containerregistry/pkg/v1"

// testPlatforms are the platforms the tests build: amd64 alone in make test, since the arm64
// image is made by the same code from a cross-compiled binary that takes minutes to build;
// make test-long (-tags long) builds both, as make image does.
var testPlatforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}}
