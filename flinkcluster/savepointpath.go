package flinkcluster

import (
	"path"
	"strings"
)

// MetadataFile is the metadata file of a savepoint directory; Flink resolves either alike.
const MetadataFile = "_metadata"

// SavepointKey is the canonical form of a savepoint location, as Flink's Path and java.net.URI
// normalise and compare it: two locations with one key name the same savepoint; a blank
// location's is "". A location without a scheme stays apart from one with: Flink resolves it
// against fs.default-scheme, which the location alone does not tell.
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
			// As java.net.URI.normalize: a first segment with a colon would read as a scheme.
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

// SameSavepoint reports whether two locations name the same savepoint (SavepointKey).
func SameSavepoint(a, b string) bool {
	return SavepointKey(a) == SavepointKey(b)
}

// hostLower lowers an authority's host and port but not its user information, as java.net.URI compares.
func hostLower(authority string) string {
	at := strings.LastIndexByte(authority, '@')
	return authority[:at+1] + asciiLower(authority[at+1:])
}

// asciiLower lowers ASCII letters only, as java.net.URI compares schemes and hosts.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
