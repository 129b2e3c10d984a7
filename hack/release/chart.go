package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"go.yaml.in/yaml/v3"
	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// PackageChart writes the chart in dir as a Helm archive into out, versioned for the release
// and pinned to its image: chart version X.Y.Z, appVersion vX.Y.Z, and the values'
// image.repository and image.digest set from image (repository@sha256:…, the reference the
// installers name), so that the chart installs exactly the image the installers do. It
// returns the archive's path.
func PackageChart(dir, version, image, out string) (string, error) {
	ref, err := name.NewDigest(image)
	if err != nil {
		return "", fmt.Errorf("the chart's image %q: want repository@sha256:<digest>: %w", image, err)
	}
	c, err := loader.Load(dir)
	if err != nil {
		return "", fmt.Errorf("loading the chart %s: %w", dir, err)
	}
	c.Metadata.Version = strings.TrimPrefix(version, "v")
	c.Metadata.AppVersion = version
	if err := pinImage(c, ref.Context().Name(), ref.DigestStr()); err != nil {
		return "", fmt.Errorf("chart %s: %w", dir, err)
	}
	if err := c.Validate(); err != nil {
		return "", fmt.Errorf("chart %s at %s: %w", dir, version, err)
	}
	return chartutil.Save(c, out)
}

// pinImage sets image.repository and image.digest in the chart's values.yaml, in its text (so
// that its comments stay, for `helm show values`) and in the values Helm renders with.
func pinImage(c *chartv2.Chart, repository, digest string) error {
	var file *common.File
	for _, f := range c.Raw {
		if f.Name == chartutil.ValuesfileName {
			file = f
		}
	}
	if file == nil {
		return fmt.Errorf("no %s", chartutil.ValuesfileName)
	}
	data, err := setScalars(file.Data, map[string]string{"repository": repository, "digest": digest}, "image")
	if err != nil {
		return fmt.Errorf("%s: %w", chartutil.ValuesfileName, err)
	}
	vals, err := common.ReadValues(data)
	if err != nil {
		return fmt.Errorf("%s once pinned: %w", chartutil.ValuesfileName, err)
	}
	img, _ := vals["image"].(map[string]any)
	if img["repository"] != repository || img["digest"] != digest {
		return fmt.Errorf("%s once pinned names %v@%v, not %s@%s", chartutil.ValuesfileName, img["repository"], img["digest"], repository, digest)
	}
	file.Data = data
	c.Values = vals
	return nil
}

// setScalars replaces, under the top-level mapping key parent of a YAML document, the
// single-line scalar values of the given keys, leaving every other byte as it is.
func setScalars(doc []byte, values map[string]string, parent string) ([]byte, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, err
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("not a mapping")
	}
	parentNode := lookup(root.Content[0], parent)
	if parentNode == nil || parentNode.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("no mapping %s", parent)
	}
	lines := bytes.Split(doc, []byte("\n"))
	for key, value := range values {
		v := lookup(parentNode, key)
		if v == nil || v.Kind != yaml.ScalarNode || strings.Contains(v.Value, "\n") || v.LineComment != "" {
			return nil, fmt.Errorf("%s.%s is not a one-line scalar without a comment", parent, key)
		}
		line := lines[v.Line-1]
		lines[v.Line-1] = append(append([]byte(nil), line[:v.Column-1]...), strconv.Quote(value)...)
	}
	return bytes.Join(lines, []byte("\n")), nil
}

// lookup returns the value of key in a mapping node, nil when absent.
func lookup(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
