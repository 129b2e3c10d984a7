package main

import (
	"fmt"
	"strings"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// PackageChart writes the chart in dir as a Helm archive into out, versioned for the release:
// chart version X.Y.Z and appVersion vX.Y.Z (the image tag the chart defaults to), as
// `helm package --version X.Y.Z --app-version vX.Y.Z` would. It returns the archive's path.
func PackageChart(dir, version, out string) (string, error) {
	c, err := loader.Load(dir)
	if err != nil {
		return "", fmt.Errorf("loading the chart %s: %w", dir, err)
	}
	c.Metadata.Version = strings.TrimPrefix(version, "v")
	c.Metadata.AppVersion = version
	if err := c.Validate(); err != nil {
		return "", fmt.Errorf("chart %s at %s: %w", dir, version, err)
	}
	return chartutil.Save(c, out)
}
