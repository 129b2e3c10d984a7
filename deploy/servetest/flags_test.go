package servetest_test

import (
	"flag"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/internal/containerargs"
	"github.com/flink-admission/flink-admission/server"
)

const (
	namespace      = "flink-admission-system"
	serviceAccount = "flink-admission"
)

// overlayDeployment renders an overlay and returns its Deployment.
func overlayDeployment(t *testing.T, overlay string) appsv1.Deployment {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), overlayDir(overlay))
	require.NoError(t, err)
	res, err := m.GetById(resid.NewResIdWithNamespace(
		resid.Gvk{Group: "apps", Version: "v1", Kind: "Deployment"}, "flink-admission", namespace))
	require.NoError(t, err)
	y, err := res.AsYAML()
	require.NoError(t, err)
	var d appsv1.Deployment
	require.NoError(t, yaml.Unmarshal(y, &d))
	return d
}

// overlayOptions renders an overlay and parses its Deployment's container arguments with the
// flag set of `flink-admission serve`, as the binary does at start-up, with POD_NAMESPACE set
// as the Deployment sets it from the downward API.
func overlayOptions(t *testing.T, overlay string) server.Options {
	t.Helper()
	d := overlayDeployment(t, overlay)
	require.Len(t, d.Spec.Template.Spec.Containers, 1)
	// As the kubelet runs them: the scoped overlay's selector comes from the env.
	args := containerargs.Expand(&d.Spec.Template.Spec.Containers[0], nil)
	require.NotEmpty(t, args)
	require.Equal(t, "serve", args[0])

	t.Setenv("POD_NAMESPACE", namespace)
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o server.Options
	o.BindFlags(fs)
	require.NoError(t, fs.Parse(args[1:]))
	require.Empty(t, fs.Args(), "arguments that are not flags")
	return o
}

func overlayDir(overlay string) string { return filepath.Join("..", "overlays", overlay) }

// TestOverlayArgsParse: a flag the binary does not know, or a combination it refuses, fails
// here and not in a cluster.
func TestOverlayArgsParse(t *testing.T) {
	for _, c := range []struct {
		overlay    string
		certMode   string
		controller bool
	}{
		{"cert-manager", server.CertModeFiles, true},
		{"self-signed", server.CertModeSelfSigned, true},
		{"webhook-only", server.CertModeSelfSigned, false},
	} {
		t.Run(c.overlay, func(t *testing.T) {
			o := overlayOptions(t, c.overlay)
			require.NoError(t, o.Validate())
			assert.Equal(t, c.certMode, o.CertMode)
			assert.Equal(t, namespace, o.Namespace)
			assert.Equal(t, 9443, o.WebhookPort)
			assert.Equal(t, c.controller, o.EnableController)
			assert.True(t, o.MetricsSecure)
		})
	}
}

// TestGracePeriodCoversShutdown: the kubelet kills the container terminationGracePeriodSeconds
// after SIGTERM. That must leave serve its whole shutdown (the drain, then the requests in
// flight), or requests still being answered are cut. With the drain in-process there is no
// preStop hook to add to it.
func TestGracePeriodCoversShutdown(t *testing.T) {
	for _, overlay := range []string{"cert-manager", "self-signed", "webhook-only"} {
		t.Run(overlay, func(t *testing.T) {
			d := overlayDeployment(t, overlay)
			o := overlayOptions(t, overlay)
			spec := d.Spec.Template.Spec
			require.NotNil(t, spec.TerminationGracePeriodSeconds)
			grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
			assert.Positive(t, o.ShutdownDrain, "the overlay drains before stopping")
			assert.GreaterOrEqual(t, grace, o.ShutdownBound(), "terminationGracePeriodSeconds covers --shutdown-drain and the graceful stop")
			assert.Nil(t, spec.Containers[0].Lifecycle, "no preStop hook: the drain is in-process (and the image has no shell)")
		})
	}
}
