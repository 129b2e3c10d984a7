// Package strictyaml loads YAML streams the way a strict parser does: a document that repeats
// a key is an error. kustomize, Helm and kubectl keep the last of two equal keys without a
// word, so a manifest that says a thing twice means only one of them; the tests load every
// manifest with this first.
package strictyaml

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Check loads every document of a YAML (or JSON) stream strictly and returns the first
// error, naming the document by its position (1 for the first).
func Check(stream []byte) error {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("document %d: %w", n, err)
		}
		if _, err := yaml.YAMLToJSONStrict(doc); err != nil {
			return fmt.Errorf("document %d: %w", n, err)
		}
	}
}
