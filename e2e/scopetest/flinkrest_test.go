package scopetest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The JobManager REST address docs/install.md's curl commands use, through
// `kubectl port-forward svc/<name>-jobmanager 8081`.
const docRESTAddress = "localhost:8081"

// moveCurlCommands returns the curl commands of docs/install.md's "Moving a namespace from
// the operator", in the doc's order: the test runs what a user reads, not a copy of it.
func moveCurlCommands(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../docs/install.md")
	require.NoError(t, err)
	doc := string(data)
	start := strings.Index(doc, "### Moving a namespace from the operator")
	require.GreaterOrEqual(t, start, 0, "install.md has no section \"Moving a namespace from the operator\"")
	section := doc[start+1:]
	if end := strings.Index(section, "\n#"); end >= 0 {
		section = section[:end]
	}
	var cmds []string
	for _, m := range regexp.MustCompile("`(curl [^`]+)`").FindAllStringSubmatch(section, -1) {
		cmds = append(cmds, m[1])
	}
	return cmds
}

// fill replaces a command's placeholders as with says and splits it into words.
func fill(t *testing.T, cmd string, with map[string]string) []string {
	t.Helper()
	for k, v := range with {
		cmd = strings.ReplaceAll(cmd, k, v)
	}
	return shellWords(t, cmd)
}

// shellWords splits a command as the shell does for the doc's commands: words separated by
// spaces, single quotes keeping their content literal. Anything else the shell would
// interpret fails the test, so the doc cannot grow a construct this reads differently.
func shellWords(t *testing.T, cmd string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range cmd {
		switch {
		case quoted && r == '\'':
			quoted = false
		case quoted:
			cur.WriteRune(r)
		case r == '\'':
			quoted, inWord = true, true
		case r == ' ':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case strings.ContainsRune("\"\\$`|&;<>()*?", r):
			t.Fatalf("the doc's command %q uses %q outside single quotes, which this test does not read as the shell does", cmd, r)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	require.False(t, quoted, "unterminated quote in %q", cmd)
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// runCurl runs a curl command of the doc and decodes its JSON answer into out. With curl on
// the machine it is run as written; without it (the tests install nothing) the same request —
// method, URL, headers and body, read from the command's -X, -H and -d — goes through Go's
// HTTP client.
func runCurl(t *testing.T, words []string, out any) {
	t.Helper()
	require.Equal(t, "curl", words[0])
	var body []byte
	if path, err := exec.LookPath("curl"); err == nil {
		cmd := exec.Command(path, words[1:]...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		body, err = cmd.Output()
		require.NoError(t, err, "%v: %s", words, stderr.String())
	} else {
		body = curlWithGo(t, words)
	}
	require.NoError(t, json.Unmarshal(body, out), "%v answered %s", words, body)
}

// curlWithGo sends the request a curl command describes (curl's -X, -H and -d; POST when
// there is a body and no -X, as curl does).
func curlWithGo(t *testing.T, words []string) []byte {
	t.Helper()
	method, target, data := "", "", ""
	header := http.Header{}
	for i := 1; i < len(words); i++ {
		switch words[i] {
		case "-X":
			i++
			method = words[i]
		case "-H":
			i++
			k, v, ok := strings.Cut(words[i], ":")
			require.True(t, ok, "header %q", words[i])
			header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		case "-d":
			i++
			data = words[i]
		default:
			require.False(t, strings.HasPrefix(words[i], "-"), "curl option %s is not read by this test", words[i])
			target = words[i]
		}
	}
	if method == "" {
		method = http.MethodGet
		if data != "" {
			method = http.MethodPost
		}
	}
	if !strings.Contains(target, "://") {
		target = "http://" + target
	}
	u, err := url.Parse(target)
	require.NoError(t, err)
	req, err := http.NewRequest(method, u.String(), strings.NewReader(data))
	require.NoError(t, err)
	req.Header = header
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return body
}

// TestCurlWithGoSendsWhatCurlSends: the fallback for a machine without curl sends each of
// the doc's commands as curl does — the same method, path, Content-Type and body.
func TestCurlWithGoSendsWhatCurlSends(t *testing.T) {
	type seen struct{ method, path, contentType, body string }
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, seen{r.Method, r.URL.Path, r.Header.Get("Content-Type"), string(b)})
		_, _ = w.Write([]byte("{}"))
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	with := map[string]string{docRESTAddress: host, "<job id>": "j1", "<request-id>": "r1", "<spec.job.savepointsDir>": "s3://b/sp"}
	cmds := moveCurlCommands(t)
	require.Len(t, cmds, 2)
	want := []seen{
		{http.MethodPost, "/jobs/j1/stop", "application/json", `{"targetDirectory": "s3://b/sp", "drain": false}`},
		{http.MethodGet, "/jobs/j1/savepoints/r1", "", ""},
	}
	for i, cmd := range cmds {
		got = nil
		curlWithGo(t, fill(t, cmd, with))
		require.Len(t, got, 1)
		assert.Equal(t, want[i], got[0], "Go's client, %s", cmd)
		if _, err := exec.LookPath("curl"); err == nil {
			got = nil
			var out map[string]any
			runCurl(t, fill(t, cmd, with), &out)
			require.Len(t, got, 1)
			assert.Equal(t, want[i], got[0], "curl, %s", cmd)
		}
	}
}
