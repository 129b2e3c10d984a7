package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/audit"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/internal/test/policyreport"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
	"github.com/flink-admission/flink-admission/policy"
)

// auditEnv is an API server with the FlinkCluster CRD and no webhook: the clusters stored in
// it are those an install stores while its webhooks are off, judged by the CRD's rules only.
type auditEnv struct {
	env *testenv.Env
	c   client.Client
}

func startAuditEnv(t *testing.T) *auditEnv {
	t.Helper()
	env, err := testenv.Start(testenv.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, env.Stop()) })
	scheme := runtime.NewScheme()
	require.NoError(t, v1beta1.AddToScheme(scheme))
	require.NoError(t, corev1.AddToScheme(scheme))
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	for _, ns := range []string{"team-a", "team-b", "flink-admission-system"} {
		require.NoError(t, c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	return &auditEnv{env: env, c: c}
}

// ruleExample is the example cluster of a policy rule (docs/policy.md's), named and placed.
func ruleExample(t *testing.T, rule, namespace, name string) *v1beta1.FlinkCluster {
	t.Helper()
	for _, r := range policy.Rules() {
		if r.Name != rule {
			continue
		}
		fc := &v1beta1.FlinkCluster{}
		require.NoError(t, yaml.UnmarshalStrict([]byte(r.Example), fc))
		fc.Namespace, fc.Name = namespace, name
		return fc
	}
	t.Fatalf("no rule %s", rule)
	return nil
}

// runAudit runs `flink-admission audit` as a user does, with the env's kubeconfig.
func (e *auditEnv) runAudit(t *testing.T, bin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"audit", "--kubeconfig", e.env.Kubeconfig}, args...)...)
	return runCommand(t, cmd, "flink-admission audit "+strings.Join(args, " "))
}

// TestAuditOfStoredClusters stores clusters with the webhooks off — two valid, two breaking a
// rule only the webhook enforces — and runs `flink-admission audit` on them: its exit status,
// its selection of namespaces and labels, its pages, and every output format.
func TestAuditOfStoredClusters(t *testing.T) {
	bin := binary(t)
	e := startAuditEnv(t)
	ctx := context.Background()
	for _, fc := range []*v1beta1.FlinkCluster{
		builder.MakeFlinkCluster("wordcount", "team-a").Label("tier", "prod").Obj(),
		builder.Wrap(ruleExample(t, policy.RuleFlinkVersion, "team-a", "clickstream")).Label("tier", "test").Obj(),
		ruleExample(t, policy.RuleHadoopConfig, "team-b", "hadoop"),
		builder.MakeFlinkCluster("sessions", "team-b").Obj(),
	} {
		require.NoError(t, e.c.Create(ctx, fc), "the API server stores %s/%s without the webhooks", fc.Namespace, fc.Name)
	}

	t.Run("text, every namespace: exit 1, each refusal with its rule's field and ratcheting", func(t *testing.T) {
		r := e.runAudit(t, bin, "-A")
		require.Equal(t, 1, r.exitCode, "%s", r)
		assert.Equal(t, `ALLOWED team-a/wordcount (stored, judged as a create)`, lineOf(r.stdout, "team-a/wordcount"))
		assert.Contains(t, r.stdout, "DENIED team-a/clickstream (stored, judged as a create)\n  error:    spec.flinkVersion: Invalid value: \"latest\": "+policy.MessageFlinkVersion+" (ratcheted: an edit that keeps it is admitted with a warning)\n")
		assert.Contains(t, r.stdout, "DENIED team-b/hadoop (stored, judged as a create)\n  error:    spec.hadoopConfig.configMapName: ")
		assert.Contains(t, r.stdout, "ALLOWED team-b/sessions")
		assert.True(t, strings.HasSuffix(r.stdout, "4 audited: 2 allowed, 2 would be denied\n"), r.stdout)
	})
	t.Run("one namespace and a selector: only those clusters, exit 0 when none is refused", func(t *testing.T) {
		r := e.runAudit(t, bin, "-n", "team-a", "-l", "tier=prod")
		require.Equal(t, 0, r.exitCode, "%s", r)
		assert.Equal(t, "ALLOWED team-a/wordcount (stored, judged as a create)\n1 audited: 1 allowed, 0 would be denied\n", r.stdout)
		r = e.runAudit(t, bin, "--namespace=team-a")
		require.Equal(t, 1, r.exitCode, "%s", r)
		assert.NotContains(t, r.stdout, "team-b/")
	})
	t.Run("the kubeconfig context's namespace by default, from KUBECONFIG", func(t *testing.T) {
		cmd := exec.Command(bin, "audit")
		cmd.Env = append(os.Environ(), "KUBECONFIG="+e.env.Kubeconfig)
		r := runCommand(t, cmd, "KUBECONFIG=... flink-admission audit")
		require.Equal(t, 0, r.exitCode, "%s", r)
		assert.Equal(t, "0 audited: 0 allowed, 0 would be denied\n", r.stdout, "envtest's context names no namespace: default, which holds no cluster")
	})
	t.Run("pages of one cluster: the same verdicts", func(t *testing.T) {
		whole, paged := e.runAudit(t, bin, "-A", "-o", "json"), e.runAudit(t, bin, "-A", "-o", "json", "--chunk-size=1")
		require.Equal(t, 1, paged.exitCode, "%s", paged)
		assert.JSONEq(t, whole.stdout, paged.stdout)
	})
	t.Run("json", func(t *testing.T) {
		r := e.runAudit(t, bin, "-A", "-o", "json")
		require.Equal(t, 1, r.exitCode, "%s", r)
		var out []struct {
			Namespace, Name, Source, Operation string
			Allowed                            bool
			Errors                             []struct {
				Field, Type, Rule, Message string
				Ratcheted                  *bool
			}
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
		require.Len(t, out, 4)
		got := map[string][]string{}
		for _, c := range out {
			assert.Empty(t, c.Source)
			assert.Equal(t, "CREATE", c.Operation)
			assert.Equal(t, len(c.Errors) == 0, c.Allowed)
			for _, e := range c.Errors {
				require.NotNil(t, e.Ratcheted)
				got[c.Namespace+"/"+c.Name] = append(got[c.Namespace+"/"+c.Name], fmt.Sprintf("%s %s ratcheted=%v", e.Rule, e.Field, *e.Ratcheted))
			}
		}
		assert.Equal(t, map[string][]string{
			"team-a/clickstream": {"flink-version spec.flinkVersion ratcheted=true"},
			"team-b/hadoop":      {"hadoop-config spec.hadoopConfig.configMapName ratcheted=true"},
		}, got)
	})
	t.Run("sarif: a valid SARIF 2.1.0 log, one result per refusal, located by namespace/name", func(t *testing.T) {
		r := e.runAudit(t, bin, "-A", "-o", "sarif")
		require.Equal(t, 1, r.exitCode, "%s", r)
		validateSARIF(t, []byte(r.stdout))
		var log struct {
			Runs []struct {
				Results []struct {
					RuleID    string `json:"ruleId"`
					Locations []struct {
						PhysicalLocation json.RawMessage `json:"physicalLocation"`
						Logical          []struct {
							FullyQualifiedName string `json:"fullyQualifiedName"`
						} `json:"logicalLocations"`
					} `json:"locations"`
					Properties map[string]any `json:"properties"`
				} `json:"results"`
			} `json:"runs"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &log))
		require.Len(t, log.Runs, 1)
		var got []string
		for _, res := range log.Runs[0].Results {
			require.Len(t, res.Locations, 1)
			assert.Nil(t, res.Locations[0].PhysicalLocation, "a stored cluster is in no file")
			got = append(got, fmt.Sprintf("%s %s %v", res.Locations[0].Logical[0].FullyQualifiedName, res.RuleID, res.Properties["ratcheted"]))
		}
		assert.Equal(t, []string{"team-a/clickstream flink-version true", "team-b/hadoop hadoop-config true"}, got)
	})
	t.Run("junit: a suite per namespace, a failed case per refused cluster", func(t *testing.T) {
		r := e.runAudit(t, bin, "-A", "-o", "junit")
		require.Equal(t, 1, r.exitCode, "%s", r)
		var out struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Suites   []struct {
				Name  string `xml:"name,attr"`
				Cases []struct {
					Name    string `xml:"name,attr"`
					Failure *struct {
						Text string `xml:",chardata"`
					} `xml:"failure"`
				} `xml:"testcase"`
			} `xml:"testsuite"`
		}
		require.NoError(t, xml.Unmarshal([]byte(r.stdout), &out), r.stdout)
		assert.Equal(t, "flink-admission audit", out.Name)
		assert.Equal(t, 4, out.Tests)
		assert.Equal(t, 2, out.Failures)
		got := map[string]bool{}
		for _, s := range out.Suites {
			for _, c := range s.Cases {
				assert.True(t, strings.HasPrefix(c.Name, s.Name+"/"), "case %s in suite %s", c.Name, s.Name)
				got[c.Name] = c.Failure != nil
				if c.Failure != nil {
					assert.Contains(t, c.Failure.Text, "(ratcheted: an edit that keeps it is admitted with a warning)")
				}
			}
		}
		assert.Equal(t, map[string]bool{"team-a/wordcount": false, "team-a/clickstream": true, "team-b/hadoop": true, "team-b/sessions": false}, got)
	})
	t.Run("an API server without the FlinkCluster CRD: exit 2", func(t *testing.T) {
		bare, err := testenv.Start(testenv.Options{WithoutCRD: true})
		require.NoError(t, err)
		defer func() { assert.NoError(t, bare.Stop()) }()
		r := runCommand(t, exec.Command(bin, "audit", "-A", "--kubeconfig", bare.Kubeconfig), "flink-admission audit -A")
		assert.Equal(t, 2, r.exitCode, "%s", r)
		assert.Contains(t, r.stderr, "audit: listing FlinkClusters: the API server serves no flinkoperator.k8s.io/v1beta1 (is the FlinkCluster CRD installed?)")
		assert.Empty(t, r.stdout)
	})
}

// TestServeAuditsPeriodically runs `flink-admission serve --audit-interval` against stored
// clusters with the webhooks off: the metric counts their refusals; once the PolicyReport CRD
// is installed, each namespace gets its report; fixing a cluster empties its namespace's report
// and removes its series.
func TestServeAuditsPeriodically(t *testing.T) {
	bin := binary(t)
	e := startAuditEnv(t)
	ctx := context.Background()
	for _, fc := range []*v1beta1.FlinkCluster{
		builder.MakeFlinkCluster("wordcount", "team-a").Obj(),
		ruleExample(t, policy.RuleFlinkVersion, "team-a", "clickstream"),
		ruleExample(t, policy.RuleHadoopConfig, "team-b", "hadoop"),
	} {
		require.NoError(t, e.c.Create(ctx, fc))
	}

	metricsPort := freePort(t)
	proc, log := startServeLogged(t, bin,
		"--cert-mode=self-signed",
		"--namespace=flink-admission-system",
		"--mutating-webhook-configuration=e2e-audit-none",
		"--validating-webhook-configuration=e2e-audit-none",
		"--enable-controller=false",
		"--webhook-port="+strconv.Itoa(freePort(t)),
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(metricsPort),
		"--metrics-secure=false",
		"--health-probe-bind-address=0",
		// Short, so that each change is seen at the next run; the test waits on what the runs
		// write, not on the time.
		"--audit-interval=500ms",
		// Each run logs at debug level: the test counts them.
		"--log-level=debug",
		"--kubeconfig="+e.env.Kubeconfig,
	)
	metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	series := func() ([]string, error) {
		body, err := httpBody(metrics)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, "flink_admission_stored_violations{") {
				out = append(out, l)
			}
		}
		return out, nil
	}
	waitSeries := func(want ...string) {
		t.Helper()
		eventually(t, 60*time.Second, "the metric counts the refusals", func() error {
			got, err := series()
			if err != nil {
				return err
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("series %q, want %q", got, want)
			}
			return nil
		})
	}
	waitSeries(
		`flink_admission_stored_violations{namespace="team-a",rule="flink-version"} 1`,
		`flink_admission_stored_violations{namespace="team-b",rule="hadoop-config"} 1`,
	)
	eventually(t, 30*time.Second, "the missing PolicyReport CRD is logged", func() error {
		if !strings.Contains(log.String(), "the PolicyReport CRD is not installed") {
			return fmt.Errorf("not logged yet")
		}
		return nil
	})
	assert.Equal(t, 1, strings.Count(log.String(), "the PolicyReport CRD is not installed"), "logged once, not at every run")

	crd := filepath.Join(t.TempDir(), "policyreport-crd.yaml")
	require.NoError(t, os.WriteFile(crd, policyreport.CRD, 0o600))
	r := runCommand(t, e.env.Kubectl("apply", "-f", crd), "kubectl apply -f policyreport-crd.yaml")
	require.Equal(t, 0, r.exitCode, "%s", r)
	require.NoError(t, e.env.WaitEstablished("policyreports.wgpolicyk8s.io", time.Minute))

	type reportState struct {
		Summary map[string]int64
		Results []string // "rule cluster ratcheted", in order
		LeftOut string
	}
	report := func(ns string) (reportState, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(audit.PolicyReportGVK)
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: audit.ReportName}, u); err != nil {
			return reportState{}, err
		}
		var st reportState
		st.Summary = map[string]int64{}
		summary, _, _ := unstructured.NestedMap(u.Object, "summary")
		for k, v := range summary {
			st.Summary[k], _ = v.(int64)
		}
		items, _, _ := unstructured.NestedSlice(u.Object, "results")
		for _, it := range items {
			m := it.(map[string]any)
			res := m["resources"].([]any)[0].(map[string]any)
			props := m["properties"].(map[string]any)
			st.Results = append(st.Results, fmt.Sprintf("%s %s %s %s ratcheted=%s", m["result"], m["rule"], res["name"], props["field"], props["ratcheted"]))
		}
		st.LeftOut = u.GetAnnotations()[audit.LeftOutAnnotation]
		return st, nil
	}
	waitReport := func(ns string, want reportState) {
		t.Helper()
		eventually(t, 60*time.Second, "the PolicyReport of "+ns, func() error {
			got, err := report(ns)
			if err != nil {
				return err
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("report %+v, want %+v", got, want)
			}
			return nil
		})
	}
	summary := func(pass, fail int64) map[string]int64 {
		return map[string]int64{"pass": pass, "fail": fail, "warn": 0, "error": 0, "skip": 0}
	}
	waitReport("team-a", reportState{Summary: summary(1, 1), LeftOut: "0",
		Results: []string{"fail flink-version clickstream spec.flinkVersion ratcheted=true"}})
	waitReport("team-b", reportState{Summary: summary(0, 1), LeftOut: "0",
		Results: []string{"fail hadoop-config hadoop spec.hadoopConfig.configMapName ratcheted=true"}})

	// The owner fixes the cluster: the next run empties the report and drops the series.
	fixed := &v1beta1.FlinkCluster{}
	require.NoError(t, e.c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "clickstream"}, fixed))
	fixed.Spec.FlinkVersion = "1.20"
	require.NoError(t, e.c.Update(ctx, fixed))
	waitReport("team-a", reportState{Summary: summary(2, 0), LeftOut: "0"})
	waitSeries(`flink_admission_stored_violations{namespace="team-b",rule="hadoop-config"} 1`)
	assert.Equal(t, 1, strings.Count(log.String(), "the PolicyReport CRD is installed"), "logged once, when found")

	// Runs that find nothing new write nothing: the reports keep their resourceVersion.
	versions := func() map[string]string {
		out := map[string]string{}
		for _, ns := range []string{"team-a", "team-b"} {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(audit.PolicyReportGVK)
			require.NoError(t, e.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: audit.ReportName}, u))
			out[ns] = u.GetResourceVersion()
		}
		return out
	}
	before := versions()
	runs := strings.Count(log.String(), "audited the stored FlinkClusters")
	eventually(t, 60*time.Second, "two more audit runs", func() error {
		if n := strings.Count(log.String(), "audited the stored FlinkClusters"); n < runs+2 {
			return fmt.Errorf("%d runs since, want 2", n-runs)
		}
		return nil
	})
	assert.Equal(t, before, versions(), "an audit that finds nothing new writes no report")

	require.NoError(t, proc.Process.Signal(syscall.SIGTERM))
	require.NoError(t, waitExit(proc, 60*time.Second), "serve exits 0 on SIGTERM")
	for _, failure := range []string{"audit of the stored FlinkClusters failed", "listing the PolicyReports", "writing a PolicyReport"} {
		assert.NotContains(t, log.String(), failure, "every audit run read the clusters and wrote its reports")
	}
}

// lineOf returns the line of s that contains sub.
func lineOf(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// validateSARIF checks data against the OASIS SARIF 2.1.0 schema that check's tests use.
func validateSARIF(t *testing.T, data []byte) {
	t.Helper()
	f, err := os.Open(filepath.Join(testenv.RepoRoot(), "check", "testdata", "sarif-schema-2.1.0.json"))
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	const url = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
	require.NoError(t, c.AddResource(url, doc))
	schema, err := c.Compile(url)
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	require.NoError(t, err, "not JSON")
	require.NoError(t, schema.Validate(inst), "the audit's SARIF breaks the SARIF 2.1.0 schema")
}
