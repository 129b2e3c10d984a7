//go:build long

package main

import v1 "github.com/google/go-containerregistry/pkg/v1"

// testPlatforms are every platform make image builds (see platforms_test.go).
var testPlatforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}
