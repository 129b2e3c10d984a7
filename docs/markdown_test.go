package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdFile is one Markdown file of the documentation, split into the parts the checks read.
type mdFile struct {
	// path is relative to the repository root, with forward slashes ("docs/policy.md").
	path string
	// lines are the file's lines, without line endings.
	lines []string
	// blocks are the fenced code blocks, in order.
	blocks []fence
	// sections are the parts between headings, in order; the text before the first heading
	// is a section with level 0.
	sections []section
}

// fence is a fenced code block.
type fence struct {
	// line is the 1-based line of the opening fence.
	line int
	// info is the info string after the opening backticks ("console", "yaml old").
	info string
	// body are the lines between the fences.
	body []string
}

// lang is the first word of the info string, the language.
func (f fence) lang() string {
	if fields := strings.Fields(f.info); len(fields) > 0 {
		return fields[0]
	}
	return ""
}

// attr is the second word of the info string ("old" in "yaml old"), or "".
func (f fence) attr() string {
	if fields := strings.Fields(f.info); len(fields) > 1 {
		return fields[1]
	}
	return ""
}

// section is a heading and what follows it up to the next heading of any level.
type section struct {
	level int
	title string
	// line is the 1-based line of the heading.
	line int
	// text are the lines outside code blocks, heading excluded.
	text []string
	// blocks are the code blocks of the section.
	blocks []fence
}

var headingRE = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)

// parseMarkdown splits a Markdown text into code blocks and sections. It knows only what
// the documentation uses: ATX headings and backtick fences.
func parseMarkdown(path, content string) *mdFile {
	f := &mdFile{path: path, lines: strings.Split(strings.ReplaceAll(content, "\r\n", "\n"), "\n")}
	cur := section{level: 0, line: 1}
	var open *fence
	var fenceMarker string
	for i, line := range f.lines {
		trimmed := strings.TrimSpace(line)
		if open != nil {
			if strings.HasPrefix(trimmed, fenceMarker) && strings.Trim(trimmed, "`") == "" {
				f.blocks = append(f.blocks, *open)
				cur.blocks = append(cur.blocks, *open)
				open = nil
				continue
			}
			open.body = append(open.body, line)
			continue
		}
		if strings.HasPrefix(trimmed, "```") {
			marker := trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, "`"))]
			open = &fence{line: i + 1, info: strings.TrimSpace(trimmed[len(marker):])}
			fenceMarker = marker
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			f.sections = append(f.sections, cur)
			cur = section{level: len(m[1]), title: m[2], line: i + 1}
			continue
		}
		cur.text = append(cur.text, line)
	}
	if open != nil {
		// An unclosed fence swallows the rest of the file; keep it so that a check fails on it
		// rather than silently skipping the text.
		f.blocks = append(f.blocks, *open)
		cur.blocks = append(cur.blocks, *open)
	}
	f.sections = append(f.sections, cur)
	return f
}

// readDocs returns README.md and every Markdown file under docs/, parsed.
func readDocs(t *testing.T) []*mdFile {
	t.Helper()
	paths := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(repoRoot, p)
			if err != nil {
				return err
			}
			paths = append(paths, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("listing the docs: %v", err)
	}
	var files []*mdFile
	for _, p := range paths {
		files = append(files, readDoc(t, p))
	}
	return files
}

// readDoc reads and parses one Markdown file, path relative to the repository root.
func readDoc(t *testing.T, path string) *mdFile {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(path)))
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return parseMarkdown(path, string(raw))
}

// sectionsUnder returns the sections after the first heading whose title contains title, up
// to the next heading of the same or a higher level (the heading's own section included).
func (f *mdFile) sectionsUnder(title string) []section {
	for i, s := range f.sections {
		if s.level == 0 || !strings.Contains(s.title, title) {
			continue
		}
		out := []section{s}
		for _, next := range f.sections[i+1:] {
			if next.level <= s.level {
				break
			}
			out = append(out, next)
		}
		return out
	}
	return nil
}

// table is a Markdown table: the header cells and the rows of cells.
type table struct {
	line   int
	header []string
	rows   [][]string
}

// tables returns the tables in lines (the text of one or more sections).
func tables(lines []string) []table {
	var out []table
	var cur *table
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		if !strings.HasPrefix(trimmed, "|") {
			if cur != nil {
				out = append(out, *cur)
				cur = nil
			}
			continue
		}
		cells := splitRow(trimmed)
		switch {
		case cur == nil:
			cur = &table{line: i + 1, header: cells}
		case isDelimiterRow(cells):
		default:
			cur.rows = append(cur.rows, cells)
		}
	}
	if cur != nil {
		out = append(out, *cur)
	}
	return out
}

// splitRow splits a table row into trimmed cells: at unescaped pipes outside code spans.
func splitRow(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	if strings.HasSuffix(row, "|") && !strings.HasSuffix(row, `\|`) {
		row = row[:len(row)-1]
	}
	var cells []string
	var b strings.Builder
	inCode := false
	for i := 0; i < len(row); i++ {
		c := row[i]
		switch {
		case c == '\\' && i+1 < len(row) && row[i+1] == '|':
			b.WriteByte('|')
			i++
		case c == '`':
			inCode = !inCode
			b.WriteByte(c)
		case c == '|' && !inCode:
			cells = append(cells, strings.TrimSpace(b.String()))
			b.Reset()
		default:
			b.WriteByte(c)
		}
	}
	return append(cells, strings.TrimSpace(b.String()))
}

func isDelimiterRow(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(c, ":- ") != "" {
			return false
		}
	}
	return true
}

var codeSpanRE = regexp.MustCompile("`([^`]+)`")

// codeSpans returns the contents of the inline code spans of s.
func codeSpans(s string) []string {
	var out []string
	for _, m := range codeSpanRE.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestParseMarkdown(t *testing.T) {
	doc := parseMarkdown("x.md", "intro\n# One\ntext `a|b` here\n```yaml old\nk: v\n```\n## Two\n| A | B |\n|---|---|\n| `x\\|y` | z |\n")
	if len(doc.blocks) != 1 || doc.blocks[0].lang() != "yaml" || doc.blocks[0].attr() != "old" ||
		len(doc.blocks[0].body) != 1 || doc.blocks[0].line != 4 {
		t.Fatalf("blocks: %+v", doc.blocks)
	}
	if len(doc.sections) != 3 || doc.sections[1].title != "One" || doc.sections[2].level != 2 {
		t.Fatalf("sections: %+v", doc.sections)
	}
	if under := doc.sectionsUnder("One"); len(under) != 2 {
		t.Fatalf("sectionsUnder: %+v", under)
	}
	tabs := tables(doc.sections[2].text)
	if len(tabs) != 1 || len(tabs[0].rows) != 1 || tabs[0].rows[0][0] != "`x|y`" || tabs[0].rows[0][1] != "z" {
		t.Fatalf("tables: %+v", tabs)
	}
	if got := codeSpans("a `b` c `d e`"); len(got) != 2 || got[1] != "d e" {
		t.Fatalf("codeSpans: %q", got)
	}
}
