package check

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/flink-admission/flink-admission/internal/version"
	"github.com/flink-admission/flink-admission/policy"
)

// SARIF 2.1.0 (OASIS): the format code scanning (GitHub, GitLab, Azure DevOps) reads. Only
// the properties check fills in are declared.
const (
	sarifVersion = "2.1.0"
	sarifSchema  = "https://json.schemastore.org/sarif-2.1.0.json"
	// SARIFWarningRule is the rule ID of an admission warning.
	SARIFWarningRule = "admission-warning"
	// docsURL is where the rules' help links point: the policy reference of the release that
	// built check, or of the main branch.
	docsURL = "https://github.com/flink-admission/flink-admission/blob/%s/docs/policy.md"
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
	Help                 sarifMessage       `json:"help"`
	HelpURI              string             `json:"helpUri"`
	DefaultConfiguration sarifConfiguration `json:"defaultConfiguration"`
}

type sarifConfiguration struct {
	Level string `json:"level"`
}

type sarifMessage struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown,omitempty"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	RuleIndex int             `json:"ruleIndex"`
	Level     string          `json:"level"`
	Message   sarifMessage    `json:"message"`
	Locations []sarifLocation `json:"locations"`
	// Properties is the result's property bag: whether ratcheting keeps a stored cluster
	// editable despite it (audit).
	Properties map[string]any `json:"properties,omitempty"`
}

type sarifLocation struct {
	// PhysicalLocation is left out for a stored cluster, which is in no file: its logical
	// location names it.
	PhysicalLocation *sarifPhysicalLocation `json:"physicalLocation,omitempty"`
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

// writeSARIF prints one run: a result per denial reason (level error, the policy rule that
// denies as its rule) and per warning (level warning), each at the place in the manifest it
// is about. The run's rules are the rules its results name, with their help.
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
	rule := func(id string) int {
		if i, ok := ruleIndex[id]; ok {
			return i
		}
		ruleIndex[id] = len(run.Tool.Driver.Rules)
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, sarifRuleOf(id))
		return ruleIndex[id]
	}
	for _, r := range results {
		object := sarifLogicalLocation{FullyQualifiedName: r.Namespace + "/" + r.Name, Kind: "object"}
		for _, e := range r.Errors {
			id := e.Rule
			if id == "" {
				id = policy.RuleUnknown
			}
			i := rule(id)
			res := sarifResult{
				RuleID: id, RuleIndex: i, Level: "error",
				Message:   sarifMessage{Text: fmt.Sprintf("%s: %s (FlinkCluster %s/%s, %s)%s", e.Field, e.Message, r.Namespace, r.Name, strings.ToLower(r.Operation), ratchetNote(e))},
				Locations: []sarifLocation{sarifLocationOf(r.Source, e.Position, object)},
			}
			if e.Ratcheted != nil {
				res.Properties = map[string]any{"ratcheted": *e.Ratcheted}
			}
			run.Results = append(run.Results, res)
		}
		for j, wn := range r.Warnings {
			i := rule(SARIFWarningRule)
			at := r.Position
			if j < len(r.warningPositions) {
				at = r.warningPositions[j]
			}
			run.Results = append(run.Results, sarifResult{
				RuleID: SARIFWarningRule, RuleIndex: i, Level: "warning",
				Message:   sarifMessage{Text: fmt.Sprintf("%s (FlinkCluster %s/%s)", wn, r.Namespace, r.Name)},
				Locations: []sarifLocation{sarifLocationOf(r.Source, at, object)},
			})
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(sarifLog{Schema: sarifSchema, Version: sarifVersion, Runs: []sarifRun{run}})
}

// sarifRuleOf describes rule id: what it requires and where docs/policy.md explains it (the
// section named after the rule).
func sarifRuleOf(id string) sarifRule {
	r := sarifRule{ID: id, DefaultConfiguration: sarifConfiguration{Level: "error"}}
	anchor := id
	switch id {
	case SARIFWarningRule:
		anchor = "warnings"
		r.DefaultConfiguration.Level = "warning"
		r.ShortDescription.Text = "FlinkCluster admitted with a warning"
		r.Help.Text = "The API server admits the FlinkCluster and relays the warning to the client (kubectl prints it). An update that keeps a violation the stored cluster already had is admitted with the error as a warning (ratcheting)."
	case RuleCRDSchema:
		anchor = "schema-constraints-of-the-crd"
		r.ShortDescription.Text = "FlinkCluster denied by the CRD's schema"
		r.Help.Text = "The CRD's OpenAPI schema refuses the value: a wrong type, a value outside an enum or a range, a missing required field. The API server checks the schema before it calls the webhook."
	case policy.RuleUnknown:
		anchor = "denials-that-are-not-about-the-cluster"
		r.ShortDescription.Text = "FlinkCluster that could not be judged"
		r.Help.Text = "check could not judge the object; the webhook denies what it cannot judge."
	default:
		info, ok := ruleInfo[id]
		if !ok {
			r.ShortDescription.Text = "FlinkCluster denied by rule " + id
			r.Help.Text = r.ShortDescription.Text + "."
			break
		}
		r.ShortDescription.Text = info.Message
		where := "the validating webhook"
		if info.EnforcedBy != policy.EnforcedByWebhook {
			where = "the validating webhook and the CRD"
		}
		r.Help.Text = fmt.Sprintf("Rule %s of the flink-admission policy, enforced by %s: %s (%s): %s.",
			id, where, info.Field, strings.ToLower(info.Type.String()), info.Message)
	}
	r.HelpURI = fmt.Sprintf(docsURL, docsRef()) + "#" + anchor
	r.Help.Markdown = fmt.Sprintf("%s\n\nSee [%s](%s).", r.Help.Text, id, r.HelpURI)
	return r
}

// ruleInfo is the policy's description of each rule, by name.
var ruleInfo = func() map[string]policy.RuleInfo {
	m := map[string]policy.RuleInfo{}
	for _, r := range policy.Rules() {
		m[r.Name] = r
	}
	return m
}()

// releaseVersion is a release's version: a tag, not a git describe string of a commit after it.
var releaseVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`)

// docsRef is the git reference of the docs that describe this build's rules.
func docsRef() string {
	if v := version.Get().Version; releaseVersion.MatchString(v) {
		return v
	}
	return "main"
}

func sarifLocationOf(source string, pos Position, object sarifLogicalLocation) sarifLocation {
	loc := sarifLocation{LogicalLocations: []sarifLogicalLocation{object}}
	if source == "" {
		return loc
	}
	loc.PhysicalLocation = &sarifPhysicalLocation{ArtifactLocation: sarifArtifactLocation{URI: artifactURI(source)}}
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
