package check

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// JUnit XML, as CI test reports (GitLab, Jenkins, GitHub test-report actions) read it: one
// test suite per manifest file, one test case per FlinkCluster, a failure per denied cluster
// and a skipped case per document that is not a FlinkCluster.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Line      int           `xml:"line,attr,omitempty"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",cdata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// writeJUnit prints one test suite per manifest file, or per namespace for stored clusters.
func writeJUnit(w io.Writer, rep report, results []Result, skipped []Skipped) error {
	out := junitSuites{Name: rep.tool}
	suites := map[string]int{}
	suite := func(source string) *junitSuite {
		i, ok := suites[source]
		if !ok {
			i = len(out.Suites)
			suites[source] = i
			out.Suites = append(out.Suites, junitSuite{Name: source})
		}
		return &out.Suites[i]
	}
	for _, r := range results {
		var c junitCase
		var s *junitSuite
		if r.Source == "" {
			s = suite(r.Namespace)
			c = junitCase{Name: r.Namespace + "/" + r.Name, Classname: r.Namespace}
		} else {
			s = suite(r.Source)
			c = junitCase{
				Name:      fmt.Sprintf("%s/%s (%s, document %d)", r.Namespace, r.Name, strings.ToLower(r.Operation), r.Index),
				Classname: r.Source, File: r.Source, Line: r.Position.Line,
			}
		}
		if len(r.Warnings) > 0 {
			c.SystemOut = "warning: " + strings.Join(r.Warnings, "\nwarning: ")
		}
		if !r.Allowed {
			var text strings.Builder
			for _, e := range r.Errors {
				if e.Line > 0 {
					fmt.Fprintf(&text, "%s:%d:%d: ", r.Source, e.Line, e.Column)
				}
				fmt.Fprintf(&text, "%s: %s%s\n", e.Field, e.Message, ratchetNote(e))
			}
			c.Failure = &junitFailure{Message: fmt.Sprintf("denied: %d error(s)", len(r.Errors)), Type: "Denied", Text: text.String()}
			if len(r.Errors) > 0 {
				c.Failure.Type = r.Errors[0].Type
				c.Failure.Message = r.Errors[0].Field + ": " + r.Errors[0].Message
			}
			s.Failures++
			out.Failures++
		}
		s.Cases = append(s.Cases, c)
		s.Tests++
		out.Tests++
	}
	for _, sk := range skipped {
		s := suite(sk.Source)
		s.Cases = append(s.Cases, junitCase{
			Name:      fmt.Sprintf("%s %s (document %d)", sk.APIVersion, sk.Kind, sk.Index),
			Classname: sk.Source, File: sk.Source, Line: sk.Position.Line,
			Skipped: &junitSkipped{Message: "not a FlinkCluster"},
		})
		s.Tests++
		s.Skipped++
		out.Tests++
		out.Skipped++
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
