package docs

import (
	"crypto/sha256"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// The CI integrations of `flink-admission check`, run as their tools would run them, without
// the network: the GitHub Action (action.yml), the pre-commit hook (.pre-commit-hooks.yaml)
// and a kustomize build piped into `check -f -`.

// action is the part of a composite action's metadata that runs.
type action struct {
	Inputs map[string]struct {
		Default string `json:"default"`
	} `json:"inputs"`
	Runs struct {
		Using string       `json:"using"`
		Steps []actionStep `json:"steps"`
	} `json:"runs"`
}

type actionStep struct {
	ID               string            `json:"id"`
	Name             string            `json:"name"`
	If               string            `json:"if"`
	Uses             string            `json:"uses"`
	With             map[string]string `json:"with"`
	Shell            string            `json:"shell"`
	WorkingDirectory string            `json:"working-directory"`
	Env              map[string]string `json:"env"`
	Run              string            `json:"run"`
}

// actionRun is one run of the action: its inputs, what each step wrote to GITHUB_OUTPUT,
// the steps that were skipped, the `uses` steps that would have run, and the status of the
// last step.
type actionRun struct {
	t          *testing.T
	inputs     map[string]string
	outputs    map[string]map[string]string
	uses       []actionStep
	status     int
	log        string
	workdir    string
	runnerTemp string
}

var expression = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// value evaluates the expressions the action uses: inputs.X, github.action_path and
// steps.ID.outputs.X. Anything else fails the test, so the action cannot grow an expression
// this runner would get wrong.
func (r *actionRun) value(expr string) string {
	switch parts := strings.Split(expr, "."); {
	case len(parts) == 2 && parts[0] == "inputs":
		v, ok := r.inputs[parts[1]]
		require.True(r.t, ok, "the action reads an undeclared input %q", parts[1])
		return v
	case expr == "github.action_path":
		return repoRoot
	case len(parts) == 4 && parts[0] == "steps" && parts[2] == "outputs":
		return r.outputs[parts[1]][parts[3]]
	}
	r.t.Fatalf("expression %q is not one this test can evaluate", expr)
	return ""
}

func (r *actionRun) expand(s string) string {
	return expression.ReplaceAllStringFunc(s, func(m string) string {
		return r.value(expression.FindStringSubmatch(m)[1])
	})
}

// condition evaluates an if: of the form `a == 'x' && b == 'y'`.
func (r *actionRun) condition(s string) bool {
	if s == "" {
		return true
	}
	if m := expression.FindStringSubmatch(s); m != nil {
		s = m[1]
	}
	for _, term := range strings.Split(s, "&&") {
		lhs, rhs, ok := strings.Cut(term, "==")
		require.True(r.t, ok, "if: %q: only == terms joined by && are understood", s)
		if r.value(strings.TrimSpace(lhs)) != strings.Trim(strings.TrimSpace(rhs), "'") {
			return false
		}
	}
	return true
}

// runAction runs the action's steps in order as the runner would: run steps with bash,
// their env and working directory expanded, GITHUB_OUTPUT collected; uses steps are
// recorded, not run (they fetch actions from the network). It stops at the first failing
// step, as a runner does. runnerTemp is RUNNER_TEMP.
func runAction(t *testing.T, workdir, runnerTemp string, inputs map[string]string) *actionRun {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "action.yml"))
	require.NoError(t, err)
	var a action
	require.NoError(t, yaml.Unmarshal(raw, &a))
	require.Equal(t, "composite", a.Runs.Using)
	r := &actionRun{t: t, inputs: map[string]string{}, outputs: map[string]map[string]string{}, workdir: workdir, runnerTemp: runnerTemp}
	for k, in := range a.Inputs {
		r.inputs[k] = in.Default
	}
	for k, v := range inputs {
		_, ok := a.Inputs[k]
		require.True(t, ok, "the test sets an input %q the action does not declare", k)
		r.inputs[k] = v
	}
	for i, s := range a.Runs.Steps {
		if !r.condition(s.If) {
			continue
		}
		if s.Uses != "" {
			s.With = expandAll(r, s.With)
			r.uses = append(r.uses, s)
			continue
		}
		require.Equal(t, "bash", s.Shell, "step %q", s.Name)
		outFile := filepath.Join(r.runnerTemp, fmt.Sprintf("output-%d", i))
		require.NoError(t, os.WriteFile(outFile, nil, 0o644))
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", s.Run)
		cmd.Dir = workdir
		if s.WorkingDirectory != "" {
			cmd.Dir = r.expand(s.WorkingDirectory)
		}
		cmd.Env = append(actionEnv(), "RUNNER_OS=Linux", "RUNNER_TEMP="+r.runnerTemp, "GITHUB_OUTPUT="+outFile, "GITHUB_ACTION_PATH="+repoRoot, "GITHUB_WORKSPACE="+workdir)
		for k, v := range expandAll(r, s.Env) {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.CombinedOutput()
		r.log += fmt.Sprintf("## %s\n%s", s.Name, out)
		written, rerr := os.ReadFile(outFile)
		require.NoError(t, rerr)
		if s.ID != "" {
			r.outputs[s.ID] = parseOutputs(string(written))
		}
		r.status = 0
		if err != nil {
			exitErr, ok := err.(*exec.ExitError)
			require.True(t, ok, "step %q: %v", s.Name, err)
			r.status = exitErr.ExitCode()
			return r
		}
	}
	return r
}

// actionEnv is a runner's environment: the Go toolchain of this machine (setup-go's part),
// no flink-admission in PATH (the action builds its own), and no network for Go.
func actionEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GOPROXY=") || strings.HasPrefix(kv, "GOFLAGS=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GOPROXY=off", "GOFLAGS=-mod=readonly")
}

func expandAll(r *actionRun, m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = r.expand(v)
	}
	return out
}

// parseOutputs reads GITHUB_OUTPUT as the runner does: name=value lines, and multiline
// values written as name<<DELIMITER, the lines, then DELIMITER.
func parseOutputs(s string) map[string]string {
	out := map[string]string{}
	lines := strings.Split(s, "\n")
	for i := 0; i < len(lines); i++ {
		if k, delim, ok := strings.Cut(lines[i], "<<"); ok && !strings.Contains(k, "=") {
			var value []string
			for i++; i < len(lines) && lines[i] != delim; i++ {
				value = append(value, lines[i])
			}
			out[k] = strings.Join(value, "\n")
			continue
		}
		if k, v, ok := strings.Cut(lines[i], "="); ok {
			out[k] = v
		}
	}
	return out
}

// pullRequestRepo is a consumer repository: the pull request's manifests in pr/, the base
// branch's in main/.
func pullRequestRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, sub := range []string{"pr", "main"} {
		require.NoError(t, os.CopyFS(filepath.Join(dir, sub), os.DirFS(filepath.Join(repoRoot, "docs", "examples", sub))))
	}
	return dir
}

func TestGitHubAction(t *testing.T) {
	repo := pullRequestRepo(t)
	// One RUNNER_TEMP for every run: after the first, the build step finds its binary up to
	// date and links nothing, as with the cache step's warm Go cache; linking it again in
	// each run would test the same build five times. Each step's outputs are written afresh.
	runnerTemp := t.TempDir()

	t.Run("a denied update: SARIF report uploaded, the job fails", func(t *testing.T) {
		r := runAction(t, repo, runnerTemp, map[string]string{"paths": "pr", "old": "main"})
		assert.Equal(t, 1, r.status, "the last step fails the job\n%s", r.log)
		assert.Equal(t, "1", r.outputs["check"]["exit-code"])
		assert.Contains(t, r.log, "pr/wordcount.yaml:14:5: spec.jobManager.deploymentType: Forbidden:", "the verdict with file:line:column in the log")

		require.Len(t, r.uses, 3, "setup-go, the Go cache and the SARIF upload")
		assert.True(t, strings.HasPrefix(r.uses[0].Uses, "actions/setup-go@"))
		assert.FileExists(t, r.uses[0].With["go-version-file"], "setup-go reads the action's go.mod")
		assert.True(t, strings.HasPrefix(r.uses[2].Uses, "github/codeql-action/upload-sarif@"))
		report := filepath.Join(repo, r.uses[2].With["sarif_file"])
		raw, err := os.ReadFile(report)
		require.NoError(t, err, "the uploaded report exists")
		var log struct {
			Version string `json:"version"`
			Runs    []struct {
				Tool struct {
					Driver struct {
						Rules []struct {
							ID      string `json:"id"`
							HelpURI string `json:"helpUri"`
						} `json:"rules"`
					} `json:"driver"`
				} `json:"tool"`
				Results []struct {
					RuleID    string `json:"ruleId"`
					Locations []struct {
						PhysicalLocation struct {
							ArtifactLocation struct{ URI string } `json:"artifactLocation"`
							Region           struct{ StartLine, StartColumn int }
						} `json:"physicalLocation"`
					} `json:"locations"`
				} `json:"results"`
			} `json:"runs"`
		}
		require.NoError(t, json.Unmarshal(raw, &log))
		assert.Equal(t, "2.1.0", log.Version)
		require.Len(t, log.Runs, 1)
		require.Len(t, log.Runs[0].Results, 2)
		loc := log.Runs[0].Results[0].Locations[0].PhysicalLocation
		assert.Equal(t, "pr/wordcount.yaml", loc.ArtifactLocation.URI, "relative to the repository root, as code scanning wants")
		assert.Equal(t, 14, loc.Region.StartLine)
		assert.Equal(t, "deployment-type-immutable", log.Runs[0].Results[0].RuleID, "the policy rule, not the error type")
		assert.Equal(t, "ha-immutable", log.Runs[0].Results[1].RuleID)
		require.Len(t, log.Runs[0].Tool.Driver.Rules, 2)
		assert.True(t, strings.HasSuffix(log.Runs[0].Tool.Driver.Rules[0].HelpURI, "/docs/policy.md#deployment-type-immutable"), log.Runs[0].Tool.Driver.Rules[0].HelpURI)
	})
	t.Run("warnings in the SARIF report point at the field they name", func(t *testing.T) {
		raw, err := os.ReadFile(filepath.Join(repoRoot, "docs", "examples", "warnings.yaml"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(repo, "warnings.yaml"), raw, 0o644))
		r := runAction(t, repo, runnerTemp, map[string]string{"paths": "warnings.yaml", "report": "warnings.sarif"})
		require.Equal(t, 0, r.status, "%s", r.log)
		report, err := os.ReadFile(filepath.Join(repo, "warnings.sarif"))
		require.NoError(t, err)
		var log struct {
			Runs []struct {
				Results []struct {
					RuleID    string `json:"ruleId"`
					Message   struct{ Text string }
					Locations []struct {
						PhysicalLocation struct {
							Region struct{ StartLine int }
						} `json:"physicalLocation"`
					} `json:"locations"`
				} `json:"results"`
			} `json:"runs"`
		}
		require.NoError(t, json.Unmarshal(report, &log))
		require.Len(t, log.Runs, 1)
		lines := strings.Split(string(raw), "\n")
		lineOf := func(key string, after int) int {
			for i := after; i < len(lines); i++ {
				if strings.HasPrefix(strings.TrimSpace(lines[i]), key+":") {
					return i + 1
				}
			}
			t.Fatalf("no %s: in warnings.yaml", key)
			return 0
		}
		want := map[string]int{
			"spec.job.restartPolicy:":                             lineOf("restartPolicy", 0),
			"spec.batchSchedulerName:":                            lineOf("batchSchedulerName", 0),
			"spec.flinkProperties[high-availability]: deprecated": lineOf("high-availability", 0),
			"spec.flinkProperties[high-availability]: ignored":    lineOf("high-availability", lineOf("high-availability", 0)),
		}
		found := 0
		for _, res := range log.Runs[0].Results {
			assert.Equal(t, "admission-warning", res.RuleID)
			for prefix, line := range want {
				if strings.HasPrefix(res.Message.Text, prefix) {
					found++
					assert.Equal(t, line, res.Locations[0].PhysicalLocation.Region.StartLine, "%s", res.Message.Text)
				}
			}
		}
		assert.Equal(t, len(want), found, "every warning looked for is reported")
	})
	t.Run("allowed manifests as a JUnit report: no upload, the job passes", func(t *testing.T) {
		r := runAction(t, repo, runnerTemp, map[string]string{"paths": "main pr/sessions.yaml", "format": "junit", "report": "check.xml"})
		assert.Equal(t, 0, r.status, "%s", r.log)
		assert.Equal(t, "0", r.outputs["check"]["exit-code"])
		require.Len(t, r.uses, 2, "only setup-go and the cache: a JUnit report is not uploaded to code scanning")
		raw, err := os.ReadFile(filepath.Join(repo, "check.xml"))
		require.NoError(t, err)
		var suites struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
		}
		require.NoError(t, xml.Unmarshal(raw, &suites))
		assert.Equal(t, 0, suites.Failures)
		assert.Equal(t, 3, suites.Tests, "two clusters and a skipped ConfigMap")
	})
	t.Run("a manifest that does not parse: the check step fails with status 2, no report is uploaded", func(t *testing.T) {
		require.NoError(t, os.CopyFS(filepath.Join(repo, "invalid"), os.DirFS(filepath.Join(repoRoot, "docs", "examples", "invalid"))))
		r := runAction(t, repo, runnerTemp, map[string]string{"paths": "pr invalid"})
		assert.Equal(t, 2, r.status, "%s", r.log)
		assert.Equal(t, "2", r.outputs["check"]["exit-code"])
		assert.Contains(t, r.log, "## Check the manifests\n", "the check step is the one that fails")
		assert.Contains(t, r.log, "::error title=flink-admission check::check: invalid/broken.yaml: document 0: ", "an error annotation names the file")
		for _, u := range r.uses {
			assert.False(t, strings.HasPrefix(u.Uses, "github/codeql-action/upload-sarif@"), "nothing is uploaded")
		}
	})
	t.Run("the Go cache is keyed on the action's go.sum, which lies outside the workspace", func(t *testing.T) {
		r := runAction(t, repo, runnerTemp, map[string]string{"paths": "main"})
		require.Equal(t, 0, r.status, "%s", r.log)
		sum, err := os.ReadFile(filepath.Join(repoRoot, "go.sum"))
		require.NoError(t, err)
		var cache *actionStep
		for i, u := range r.uses {
			switch {
			case strings.HasPrefix(u.Uses, "actions/setup-go@"):
				// hashFiles (actions/glob), which setup-go's cache uses, skips every file
				// outside GITHUB_WORKSPACE: a key from the action's go.sum is never made.
				if u.With["cache"] != "false" {
					dep := u.With["cache-dependency-path"]
					rel, err := filepath.Rel(r.workdir, dep)
					assert.True(t, dep != "" && err == nil && !strings.HasPrefix(rel, ".."),
						"setup-go's cache hashes %q, outside the workspace %s: it never restores", dep, r.workdir)
				}
			case strings.HasPrefix(u.Uses, "actions/cache@"):
				cache = &r.uses[i]
			}
		}
		require.NotNil(t, cache, "an actions/cache step")
		assert.Contains(t, cache.With["key"], fmt.Sprintf("%x", sha256.Sum256(sum)), "the key changes with the action's dependencies")
		assert.Contains(t, cache.With["key"], "Linux", "the key names the runner's system")
		goEnv, err := exec.Command("go", "env", "GOMODCACHE", "GOCACHE").Output()
		require.NoError(t, err)
		assert.Equal(t, strings.Fields(string(goEnv)), strings.Split(cache.With["path"], "\n"), "the module and build caches")
	})
}

// hook is an entry of .pre-commit-hooks.yaml.
type hook struct {
	ID       string `json:"id"`
	Entry    string `json:"entry"`
	Language string `json:"language"`
	Files    string `json:"files"`
}

// TestPreCommitHook runs the hook as pre-commit does: for language golang it installs the
// repository's command with `go install` into the hook's environment, puts its bin first in
// PATH, and runs the entry with the staged files that match `files` as arguments.
func TestPreCommitHook(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, ".pre-commit-hooks.yaml"))
	require.NoError(t, err)
	var hooks []hook
	require.NoError(t, yaml.Unmarshal(raw, &hooks))
	require.Len(t, hooks, 1)
	h := hooks[0]
	assert.Equal(t, "flink-admission-check", h.ID)
	require.Equal(t, "golang", h.Language)
	files := regexp.MustCompile(h.Files)

	gobin := t.TempDir()
	install := exec.Command("go", "install", "./cmd/flink-admission")
	install.Dir = repoRoot
	install.Env = append(actionEnv(), "GOBIN="+gobin)
	out, err := install.CombinedOutput()
	require.NoError(t, err, "%s", out)

	repo := pullRequestRepo(t)
	require.NoError(t, os.WriteFile(filepath.Join(repo, "README.md"), []byte("# not a manifest\n"), 0o644))
	run := func(staged ...string) (int, string) {
		t.Helper()
		args := strings.Fields(h.Entry)
		for _, f := range staged {
			if files.MatchString(f) {
				args = append(args, f)
			}
		}
		// Through the hook environment's PATH, as pre-commit finds the entry.
		cmd := exec.Command("bash", append([]string{"-c", `exec "$@"`, "hook"}, args...)...)
		cmd.Dir = repo
		cmd.Env = append(actionEnv(), "PATH="+gobin+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if exitErr, ok := err.(*exec.ExitError); ok {
			return exitErr.ExitCode(), string(out)
		}
		require.NoError(t, err)
		return 0, string(out)
	}
	status, got := run("README.md", "main/wordcount.yaml", "pr/sessions.yaml")
	assert.Equal(t, 0, status, "allowed manifests pass the commit\n%s", got)
	assert.NotContains(t, got, "README.md", "files outside the hook's pattern are not passed")
	assert.Contains(t, got, "2 checked: 2 allowed")

	// The pull request's cluster without its HA settings: a Deployment JobManager needs them.
	pr, err := os.ReadFile(filepath.Join(repo, "pr", "wordcount.yaml"))
	require.NoError(t, err)
	noHA, _, ok := strings.Cut(string(pr), "  flinkProperties:\n")
	require.True(t, ok)
	require.NoError(t, os.WriteFile(filepath.Join(repo, "pr", "no-ha.yaml"), []byte(noHA), 0o644))
	status, got = run("pr/no-ha.yaml", "README.md")
	assert.Equal(t, 1, status, "a denied manifest stops the commit\n%s", got)
	assert.Contains(t, got, "pr/no-ha.yaml:9:1: spec.flinkProperties[high-availability.type]: Required value", "the missing field at its deepest written parent")
}

// TestKustomizeBuildPiped: `kustomize build DIR | flink-admission check -f - --old main`, with the build
// made by kustomize's library and the output sent through a pipe to the binary's stdin;
// positions count in the rendered stream.
func TestKustomizeBuildPiped(t *testing.T) {
	dir := pullRequestRepo(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pr", "kustomization.yaml"),
		[]byte("resources:\n- sessions.yaml\n- wordcount.yaml\n"), 0o644))
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(dir, "pr"))
	require.NoError(t, err)
	rendered, err := m.AsYaml()
	require.NoError(t, err)

	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	cmd := exec.Command(binary, "check", "-f", "-", "--old", filepath.Join(dir, "main"))
	cmd.Stdin = pr
	var stdout strings.Builder
	cmd.Stdout = &stdout
	cmd.Stderr = &stdout
	require.NoError(t, cmd.Start())
	require.NoError(t, pr.Close())
	_, err = pw.Write(rendered)
	require.NoError(t, err)
	require.NoError(t, pw.Close())
	err = cmd.Wait()
	exitErr, ok := err.(*exec.ExitError)
	require.True(t, ok, "the denied update exits 1: %v\n%s", err, stdout.String())
	assert.Equal(t, 1, exitErr.ExitCode())

	// kustomize sorts the keys: find the line of deploymentType in what it rendered.
	line := 0
	for i, l := range strings.Split(string(rendered), "\n") {
		if strings.TrimSpace(l) == "deploymentType: Deployment" {
			line = i + 1
		}
	}
	require.NotZero(t, line)
	out := stdout.String()
	assert.Contains(t, out, "DENIED streaming/wordcount (update, - document")
	assert.Contains(t, out, "skipped - document")
	assert.Contains(t, out, fmt.Sprintf("-:%d:", line), "positions in the rendered stream\n%s", out)
}
