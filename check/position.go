package check

import (
	"bytes"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Position is where something is written in its file: line and column, both from 1. The
// zero Position means unknown (a document the position parser could not read).
type Position struct {
	Line   int `json:"line,omitempty"`
	Column int `json:"column,omitempty"`
}

// chunk is one document of a file as the manifest decoder splits it, with the line its first
// line has in the file.
type chunk struct {
	data      []byte
	startLine int
}

// splitDocuments splits data the way the manifest decoder (apimachinery's YAMLReader) does,
// so that chunk i is document i: at lines that start with "---" (followed only by blanks or a
// comment), never yielding an empty chunk. A JSON stream (first non-blank byte '{' or '[') is
// one chunk: positions are then known for its first object only.
func splitDocuments(data []byte) []chunk {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		return []chunk{{data: data, startLine: 1}}
	}
	var chunks []chunk
	var cur []byte
	start := 1
	line := 1
	for len(data) > 0 {
		l := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l = data[:i+1]
		}
		data = data[len(l):]
		if rest, ok := bytes.CutPrefix(l, []byte("---")); ok {
			if trimmed := strings.TrimSpace(string(rest)); trimmed == "" || trimmed[0] == '#' {
				if len(cur) > 0 {
					chunks = append(chunks, chunk{data: cur, startLine: start})
				}
				cur = nil
				line++
				start = line
				continue
			}
		}
		if len(cur) == 0 {
			start = line
		}
		cur = append(cur, l...)
		line++
	}
	if len(cur) > 0 {
		chunks = append(chunks, chunk{data: cur, startLine: start})
	}
	return chunks
}

// parseNode reads a chunk's node tree, with lines counted in the file; nil when the chunk
// does not parse (its positions are then unknown).
func parseNode(c chunk) *yaml.Node {
	var doc yaml.Node
	if err := yaml.Unmarshal(c.data, &doc); err != nil || len(doc.Content) == 0 {
		return nil
	}
	shift(&doc, c.startLine-1, map[*yaml.Node]bool{})
	return doc.Content[0]
}

// shift moves every node of the tree down by offset lines.
func shift(n *yaml.Node, offset int, seen map[*yaml.Node]bool) {
	if n == nil || seen[n] {
		return
	}
	seen[n] = true
	n.Line += offset
	for _, c := range n.Content {
		shift(c, offset, seen)
	}
}

// positionOf is where the field at path (a field.Path string: "spec.job.args[1]",
// "spec.flinkProperties[high-availability.type]") is written in the document root: the key
// of a mapping entry, the item of a sequence. A field that is not written (a required field
// left out) points at the deepest part of its path that is; the root at the document.
func positionOf(root *yaml.Node, path string) Position {
	if root == nil {
		return Position{}
	}
	at := Position{Line: root.Line, Column: root.Column}
	n := root
	for _, seg := range pathSegments(path) {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		switch n.Kind {
		case yaml.MappingNode:
			next := -1
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == seg {
					next = i
					break
				}
			}
			if next < 0 {
				return at
			}
			at = Position{Line: n.Content[next].Line, Column: n.Content[next].Column}
			n = n.Content[next+1]
		case yaml.SequenceNode:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(n.Content) {
				return at
			}
			n = n.Content[i]
			at = Position{Line: n.Line, Column: n.Column}
		default:
			return at
		}
	}
	return at
}

// pathSegments splits a field.Path string into its names, indexes and keys; a key may be
// quoted (CEL's fieldPath style) and may hold dots.
func pathSegments(path string) []string {
	var segs []string
	for path != "" {
		switch path[0] {
		case '.':
			path = path[1:]
		case '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return append(segs, path[1:])
			}
			segs = append(segs, strings.Trim(path[1:end], `'"`))
			path = path[end+1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			segs = append(segs, path[:end])
			path = path[end:]
		}
	}
	return segs
}
