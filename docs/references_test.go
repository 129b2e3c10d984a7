package docs

import (
	"bufio"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// codeTexts returns the code of a document: the bodies of its code blocks and its inline
// code spans, with the line each starts on. Commands are only ever written as code, so
// prose such as "make sure" is not mistaken for one.
func codeTexts(doc *mdFile) []located {
	var out []located
	for _, b := range doc.blocks {
		for i, line := range b.body {
			out = append(out, located{line: b.line + 1 + i, text: line})
		}
	}
	inBlock := map[int]bool{}
	for _, b := range doc.blocks {
		for i := 0; i <= len(b.body)+1; i++ {
			inBlock[b.line+i] = true
		}
	}
	for i, line := range doc.lines {
		if inBlock[i+1] {
			continue
		}
		for _, span := range codeSpans(line) {
			out = append(out, located{line: i + 1, text: span})
		}
	}
	return out
}

// located is a piece of text and the 1-based line it is on.
type located struct {
	line int
	text string
}

var makeRE = regexp.MustCompile(`(?:^|[\s;&|(])make\s+([A-Za-z][\w.-]*)`)

// makeTargets returns the targets the Makefile defines.
func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	targetRE := regexp.MustCompile(`^([A-Za-z0-9_.-]+(?:\s+[A-Za-z0-9_.-]+)*)\s*:([^=]|$)`)
	targets := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if m := targetRE.FindStringSubmatch(line); m != nil {
			for _, name := range strings.Fields(m[1]) {
				targets[name] = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return targets
}

// TestMakeTargets checks that every `make <target>` the docs show exists in the Makefile.
func TestMakeTargets(t *testing.T) {
	targets := makeTargets(t)
	if !targets["test"] || !targets["run"] {
		t.Fatalf("the Makefile parser found no test or run target: %v", targets)
	}
	seen := 0
	for _, doc := range readDocs(t) {
		for _, c := range codeTexts(doc) {
			for _, m := range makeRE.FindAllStringSubmatch(c.text, -1) {
				seen++
				if !targets[m[1]] {
					t.Errorf("%s:%d: `make %s`: the Makefile has no target %q", doc.path, c.line, m[1], m[1])
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("the docs name no make target: the README's quick start is gone, or the parser broke")
	}
}

// repoPathRE matches a path into the repository's top-level folders, not preceded by
// anything that would make it part of a URL, a module path or a longer path.
var repoPathRE = regexp.MustCompile(`(?:^|[^\w./~-])((?:deploy|docs|check|cmd|api|policy|celrules|webhook|certs|controller|hack|internal|e2e)/[\w./-]*)`)

// TestRepositoryPaths checks that every repository path the docs mention (deploy/...,
// docs/..., check/testdata/...) and every relative link exists.
func TestRepositoryPaths(t *testing.T) {
	seen := 0
	for _, doc := range readDocs(t) {
		for i, line := range doc.lines {
			for _, m := range repoPathRE.FindAllStringSubmatch(line, -1) {
				p := strings.TrimRight(m[1], ".,:;)")
				if p == "" {
					continue
				}
				seen++
				if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(p))); err != nil {
					t.Errorf("%s:%d: %s does not exist in the repository", doc.path, i+1, p)
				}
			}
			for _, target := range markdownLinks(codeSpanRE.ReplaceAllString(line, "")) {
				seen++
				if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(target.resolve(doc.path)))); err != nil {
					t.Errorf("%s:%d: link %s: %s does not exist", doc.path, i+1, target.raw, target.resolve(doc.path))
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("the docs mention no repository path: the parser broke")
	}
}

var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// link is a relative Markdown link.
type link struct{ raw, target string }

// resolve returns the link's target relative to the repository root, from the document at
// docPath.
func (l link) resolve(docPath string) string {
	return path.Clean(path.Join(path.Dir(docPath), l.target))
}

// markdownLinks returns the relative links of a line (web links and in-page anchors are not
// files).
func markdownLinks(line string) []link {
	var out []link
	for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
		raw := m[1]
		if strings.Contains(raw, "://") || strings.HasPrefix(raw, "#") || strings.HasPrefix(raw, "mailto:") {
			continue
		}
		target, _, _ := strings.Cut(raw, "#")
		out = append(out, link{raw: raw, target: target})
	}
	return out
}

var kustomizeRE = regexp.MustCompile(`(?:\bkubectl\s.*?\s(?:-k|--kustomize)(?:=|\s+)|\bkubectl\s+kustomize\s+|\bkustomize\s+build\s+)([^\s|;&]+)`)

// TestKustomizeDirectories checks that every `kubectl apply -k <dir>` (delete, diff,
// kubectl kustomize, kustomize build) names a directory with a kustomization.
func TestKustomizeDirectories(t *testing.T) {
	seen := 0
	for _, doc := range readDocs(t) {
		for _, c := range codeTexts(doc) {
			for _, m := range kustomizeRE.FindAllStringSubmatch(c.text, -1) {
				dir := m[1]
				seen++
				found := false
				for _, name := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
					if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(dir), name)); err == nil {
						found = true
					}
				}
				if !found {
					t.Errorf("%s:%d: %q: %s is not a kustomization directory", doc.path, c.line, strings.TrimSpace(m[0]), dir)
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("the docs apply no kustomization: install.md lost its overlays, or the parser broke")
	}
}

func TestReferenceParsers(t *testing.T) {
	if m := makeRE.FindAllStringSubmatch("cd x && make run; make test", -1); len(m) != 2 || m[1][1] != "test" {
		t.Fatalf("makeRE: %q", m)
	}
	if m := repoPathRE.FindAllStringSubmatch("see deploy/overlays/cert-manager, not github.com/x/deploy/y or ./docs/z", -1); len(m) != 1 || m[0][1] != "deploy/overlays/cert-manager" {
		t.Fatalf("repoPathRE: %q", m)
	}
	for in, want := range map[string]string{
		"kubectl apply -k deploy/overlays/self-signed":                      "deploy/overlays/self-signed",
		"kubectl delete --ignore-not-found -k deploy/overlays/cert-manager": "deploy/overlays/cert-manager",
		"kubectl apply --dry-run=server -k deploy/base":                     "deploy/base",
		"kustomize build deploy/overlays/x | kubectl apply -f -":            "deploy/overlays/x",
	} {
		if m := kustomizeRE.FindStringSubmatch(in); m == nil || m[1] != want {
			t.Errorf("kustomizeRE(%q) = %q, want %q", in, m, want)
		}
	}
	if l := markdownLinks("[a](../deploy/x.yaml) [b](#anchor) [c](https://x.io) [d](ops.md#metrics)"); len(l) != 2 ||
		l[0].resolve("docs/policy.md") != "deploy/x.yaml" || l[1].resolve("docs/policy.md") != "docs/ops.md" {
		t.Fatalf("markdownLinks: %+v", l)
	}
}
