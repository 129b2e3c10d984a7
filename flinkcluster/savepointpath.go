package flinkcluster

import (
	"path"
	"strings"
)

// MetadataFile is the file of a savepoint (or retained checkpoint) directory that holds its
// metadata: Flink restores and disposes of a savepoint named by its directory or by this
// file alike (AbstractFsCheckpointStorageAccess.resolveCheckpointPointer).
const MetadataFile = "_metadata"

// SavepointKey is the canonical form of a savepoint location: two locations with the same
// key name the same savepoint as Flink resolves them. Flink parses a location into an
// org.apache.flink.core.fs.Path, which trims it, turns backslashes into slashes, collapses
// repeated slashes, drops a trailing one and removes "." and ".." segments; an empty
// authority is no authority, so file:///x and Flink's own spelling file:/x are one URI; and
// it restores a directory or its _metadata file alike. As java.net.URI compares them, the
// scheme and the host are compared without regard to ASCII case, the path and the rest as
// they are. A blank location's key is "": callers that need a savepoint check for it.
//
// A location without a scheme stays apart from one with: Flink resolves it against
// fs.default-scheme, which a location alone does not tell.
func SavepointKey(location string) string {
	s := strings.TrimSpace(location)
	if s == "" {
		return ""
	}
	var scheme, authority string
	hasScheme := false
	if colon, slash := strings.IndexByte(s, ':'), strings.IndexByte(s, '/'); colon >= 0 && (slash < 0 || colon < slash) {
		scheme, s, hasScheme = asciiLower(s[:colon]), s[colon+1:], true
	}
	if strings.HasPrefix(s, "//") && len(s) > 2 {
		end := strings.IndexByte(s[2:], '/')
		if end < 0 {
			end = len(s) - 2
		}
		authority, s = hostLower(s[2:2+end]), s[2+end:]
	}
	p := strings.ReplaceAll(s, `\`, "/")
	if p != "" {
		p = path.Clean(p)
		if path.Base(p) == MetadataFile {
			p = path.Dir(p)
		}
		if first, _, _ := strings.Cut(p, "/"); !hasScheme && authority == "" && strings.Contains(first, ":") {
			// As java.net.URI.normalize does: a relative path whose first segment holds a
			// colon would read as a scheme.
			p = "./" + p
		}
	}
	var b strings.Builder
	if hasScheme {
		b.WriteString(scheme)
		b.WriteByte(':')
	}
	if authority != "" {
		b.WriteString("//")
		b.WriteString(authority)
	}
	b.WriteString(p)
	return b.String()
}

// SameSavepoint reports whether two locations name the same savepoint (SavepointKey): a
// savepoint a deploy restores is the savepoint of the history that Flink wrote, however the
// user or Flink spelled either.
func SameSavepoint(a, b string) bool {
	return SavepointKey(a) == SavepointKey(b)
}

// hostLower lowers the ASCII case of an authority's host and port, leaving its user
// information as it is (java.net.URI compares those so).
func hostLower(authority string) string {
	at := strings.LastIndexByte(authority, '@')
	return authority[:at+1] + asciiLower(authority[at+1:])
}

// asciiLower lowers ASCII letters only, as java.net.URI compares schemes and hosts; other
// bytes, valid UTF-8 or not, stay as they are.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
