package check

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/flink-admission/flink-admission/internal/version"
)

// SARIF 2.1.0 (OASIS): the format code scanning (GitHub, GitLab, Azure DevOps) reads. Only
// the properties check fills in are declared.
const (
	sarifVersion = "2.1.0"
	sarifSchema  = "https://json.schemastore.org/sarif-2.1.0.json"
	// SARIFWarningRule is the rule ID of an admission warning.
	SARIFWarningRule = "AdmissionWarning"
	// stdinURI names standard input, which has no file, in a SARIF artifact location.
	stdinURI = "stdin"
)

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool       sarifTool     `json:"tool"`
	ColumnKind string        `json:"columnKind"`
	Results    []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri"`
	Version        string      `json:"version,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string             `json:"id"`
	ShortDescription     sarifMessage       `json:"shortDescription"`
	DefaultConfiguration sarifConfiguration `json:"defaultConfiguration"`
}

type sarifConfiguration struct {
	Level string `json:"level"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	RuleIndex int             `json:"ruleIndex"`
	Level     string          `json:"level"`
	Message   sarifMessage    `json:"message"`
	Locations []sarifLocation `json:"locations"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysicalLocation  `json:"physicalLocation"`
	LogicalLocations []sarifLogicalLocation `json:"logicalLocations,omitempty"`
}

type sarifPhysicalLocation struct {
	ArtifactLocation sarifArtifactLocation `json:"artifactLocation"`
	// Region is left out when the position is unknown: SARIF requires startLine >= 1.
	Region *sarifRegion `json:"region,omitempty"`
}

type sarifArtifactLocation struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn,omitempty"`
}

type sarifLogicalLocation struct {
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind"`
}

// writeSARIF prints one run: a result per denial reason (level error, the field error's type
// as rule) and per warning (level warning), each at the place in the manifest it is about.
func writeSARIF(w io.Writer, results []Result) error {
	run := sarifRun{
		Tool: sarifTool{Driver: sarifDriver{
			Name:           "flink-admission",
			InformationURI: "https://github.com/flink-admission/flink-admission",
			Version:        sarifToolVersion(),
			Rules:          []sarifRule{},
		}},
		ColumnKind: "unicodeCodePoints",
		Results:    []sarifResult{},
	}
	ruleIndex := map[string]int{}
	rule := func(id, description, level string) int {
		if i, ok := ruleIndex[id]; ok {
			return i
		}
		ruleIndex[id] = len(run.Tool.Driver.Rules)
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, sarifRule{
			ID: id, ShortDescription: sarifMessage{Text: description}, DefaultConfiguration: sarifConfiguration{Level: level},
		})
		return ruleIndex[id]
	}
	for _, r := range results {
		object := sarifLogicalLocation{FullyQualifiedName: r.Namespace + "/" + r.Name, Kind: "object"}
		for _, e := range r.Errors {
			i := rule(e.Type, "FlinkCluster denied: "+strings.ToLower(field.ErrorType(e.Type).String()), "error")
			run.Results = append(run.Results, sarifResult{
				RuleID: e.Type, RuleIndex: i, Level: "error",
				Message:   sarifMessage{Text: fmt.Sprintf("%s: %s (FlinkCluster %s/%s, %s)", e.Field, e.Message, r.Namespace, r.Name, strings.ToLower(r.Operation))},
				Locations: []sarifLocation{sarifLocationOf(r.Source, e.Position, object)},
			})
		}
		for _, wn := range r.Warnings {
			i := rule(SARIFWarningRule, "FlinkCluster admitted with a warning", "warning")
			run.Results = append(run.Results, sarifResult{
				RuleID: SARIFWarningRule, RuleIndex: i, Level: "warning",
				Message:   sarifMessage{Text: fmt.Sprintf("%s (FlinkCluster %s/%s)", wn, r.Namespace, r.Name)},
				Locations: []sarifLocation{sarifLocationOf(r.Source, r.Position, object)},
			})
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(sarifLog{Schema: sarifSchema, Version: sarifVersion, Runs: []sarifRun{run}})
}

func sarifLocationOf(source string, pos Position, object sarifLogicalLocation) sarifLocation {
	loc := sarifLocation{
		PhysicalLocation: sarifPhysicalLocation{ArtifactLocation: sarifArtifactLocation{URI: artifactURI(source)}},
		LogicalLocations: []sarifLogicalLocation{object},
	}
	if pos.Line > 0 {
		loc.PhysicalLocation.Region = &sarifRegion{StartLine: pos.Line, StartColumn: pos.Column}
	}
	return loc
}

// artifactURI turns a manifest path into a SARIF artifact URI: a relative path stays
// relative (code scanning resolves it against the repository root, so run check from there),
// an absolute one becomes a file URI.
func artifactURI(source string) string {
	if source == "-" {
		return stdinURI
	}
	p := filepath.ToSlash(source)
	if filepath.IsAbs(source) {
		return (&url.URL{Scheme: "file", Path: p}).String()
	}
	return (&url.URL{Path: strings.TrimPrefix(p, "./")}).EscapedPath()
}

func sarifToolVersion() string {
	if v := version.Get().Version; v != version.Unknown {
		return v
	}
	return ""
}
