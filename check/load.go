package check

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// Document is one FlinkCluster manifest read from a file.
type Document struct {
	// Source is the file the document came from ("-" for standard input).
	Source string
	// Index is the document's position in its file, from 0.
	Index int
	// Object is the decoded manifest.
	Object map[string]any
	// Position is where the document (or, in a List, the item) starts in Source.
	Position Position

	// node is the document's YAML node tree, for the positions of its fields; nil when
	// unknown.
	node *yaml.Node
}

// PositionOf is where the field at path (a field.Path string) is written in the document;
// the zero Position when the document's positions are unknown.
func (d Document) PositionOf(path string) Position {
	return positionOf(d.node, path)
}

// Skipped is a document that is not a FlinkCluster and was therefore not checked.
type Skipped struct {
	Source     string
	Index      int
	APIVersion string
	Kind       string
	// Position is where the document (or List item) starts.
	Position Position
}

// ParseError is a file or document that cannot be read; it names the file and the
// document index so that a CI log points at the broken manifest.
type ParseError struct {
	Source string
	Index  int // -1 when the file itself could not be read
	Err    error
}

func (e *ParseError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("%s: %v", e.Source, e.Err)
	}
	return fmt.Sprintf("%s: document %d: %v", e.Source, e.Index, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// manifestExtensions are the file endings a directory walk picks up.
var manifestExtensions = map[string]bool{".yaml": true, ".yml": true, ".json": true}

// Load reads every path: a file, a directory (recursively, *.yaml, *.yml and *.json, in
// lexical order) or "-" for stdin. Multi-document YAML and `kind: List` are expanded.
// Documents that are not FlinkClusters are returned as skipped.
func Load(paths []string, stdin io.Reader) ([]Document, []Skipped, error) {
	var docs []Document
	var skipped []Skipped
	for _, p := range paths {
		files, err := expand(p)
		if err != nil {
			return nil, nil, err
		}
		for _, f := range files {
			var data []byte
			if f == "-" {
				data, err = io.ReadAll(stdin)
			} else {
				data, err = os.ReadFile(f)
			}
			if err != nil {
				return nil, nil, &ParseError{Source: f, Index: -1, Err: err}
			}
			d, s, err := decode(f, data)
			if err != nil {
				return nil, nil, err
			}
			docs = append(docs, d...)
			skipped = append(skipped, s...)
		}
	}
	return docs, skipped, nil
}

func expand(p string) ([]string, error) {
	if p == "-" {
		return []string{"-"}, nil
	}
	info, err := os.Stat(p)
	if err != nil {
		return nil, &ParseError{Source: p, Index: -1, Err: err}
	}
	if !info.IsDir() {
		return []string{p}, nil
	}
	var files []string
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && manifestExtensions[strings.ToLower(filepath.Ext(path))] {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, &ParseError{Source: p, Index: -1, Err: err}
	}
	sort.Strings(files)
	return files, nil
}

func decode(source string, data []byte) ([]Document, []Skipped, error) {
	var docs []Document
	var skipped []Skipped
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	chunks := splitDocuments(data)
	for index := 0; ; index++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return docs, skipped, nil
		}
		if err != nil {
			return nil, nil, &ParseError{Source: source, Index: index, Err: err}
		}
		if len(bytes.TrimSpace(raw)) == 0 { // a document of comments only, as kubectl skips it
			continue
		}
		// utiljson keeps integers as int64, as the API server hands them to CEL.
		var obj map[string]any
		if err := utiljson.Unmarshal(raw, &obj); err != nil {
			return nil, nil, &ParseError{Source: source, Index: index, Err: fmt.Errorf("not an object: %w", err)}
		}
		if obj == nil { // an empty document between two "---"
			continue
		}
		var node *yaml.Node
		if index < len(chunks) {
			node = parseNode(chunks[index])
		}
		items := []map[string]any{obj}
		nodes := []*yaml.Node{node}
		if kind, _ := obj["kind"].(string); kind == "List" {
			items, err = listItems(obj)
			if err != nil {
				return nil, nil, &ParseError{Source: source, Index: index, Err: err}
			}
			nodes = listItemNodes(node, len(items))
		}
		for i, item := range items {
			apiVersion, _ := item["apiVersion"].(string)
			kind, _ := item["kind"].(string)
			if apiVersion != v1beta1.GroupVersion.String() || kind != v1beta1.Kind {
				skipped = append(skipped, Skipped{Source: source, Index: index, APIVersion: apiVersion, Kind: kind, Position: positionOf(nodes[i], "")})
				continue
			}
			docs = append(docs, Document{Source: source, Index: index, Object: item,
				Position: positionOf(nodes[i], ""), node: nodes[i]})
		}
	}
}

// listItemNodes are the nodes of a List's n items; nil for each when the list's nodes do
// not match its items.
func listItemNodes(list *yaml.Node, n int) []*yaml.Node {
	nodes := make([]*yaml.Node, n)
	if list == nil || list.Kind != yaml.MappingNode {
		return nodes
	}
	for i := 0; i+1 < len(list.Content); i += 2 {
		if seq := list.Content[i+1]; list.Content[i].Value == "items" && seq.Kind == yaml.SequenceNode && len(seq.Content) == n {
			copy(nodes, seq.Content)
		}
	}
	return nodes
}

func listItems(list map[string]any) ([]map[string]any, error) {
	raw, ok := list["items"].([]any)
	if !ok {
		if list["items"] == nil {
			return nil, nil
		}
		return nil, fmt.Errorf("kind List: items is not a list")
	}
	items := make([]map[string]any, 0, len(raw))
	for i, it := range raw {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("kind List: items[%d] is not an object", i)
		}
		items = append(items, m)
	}
	return items, nil
}
