package webhook

import (
	"bytes"
	"encoding/json"

	"gomodules.xyz/jsonpatch/v2"
)

// encodePatch encodes a JSON patch as json.Marshal does. json.Marshal calls each
// operation's MarshalJSON, which encodes the operation with encoding/json, and then
// re-reads that output to check and compact it: a tenth of a typical mutating review. Here
// the operations are written into one buffer, and only their values go through
// encoding/json, with one Encoder writing into that buffer: what it writes is what
// json.Marshal returns (HTML escaped, compacted) plus a newline, without a slice of its
// own for each value.
func encodePatch(ops []jsonpatch.JsonPatchOperation) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(2 + 128*len(ops))
	enc := json.NewEncoder(&buf)
	b := buf.AvailableBuffer()
	b = append(b, '[')
	for i := range ops {
		op := &ops[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"op":`...)
		b = appendJSONString(b, op.Operation)
		b = append(b, `,"path":`...)
		b = appendJSONString(b, op.Path)
		switch {
		case op.Value != nil:
			buf.Write(append(b, `,"value":`...))
			if err := enc.Encode(op.Value); err != nil {
				return nil, err
			}
			buf.Truncate(buf.Len() - 1) // the newline
			b = buf.AvailableBuffer()
		case op.Operation == "add" || op.Operation == "replace":
			// As MarshalJSON: these operations carry a value, null if none.
			b = append(b, `,"value":null`...)
		}
		b = append(b, '}')
	}
	buf.Write(append(b, ']'))
	return buf.Bytes(), nil
}

// appendJSONString appends s as encoding/json encodes it: plain printable ASCII as is,
// anything that it escapes (quotes, backslashes, control characters, HTML characters,
// non-ASCII) through encoding/json itself.
func appendJSONString(b []byte, s string) []byte {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
