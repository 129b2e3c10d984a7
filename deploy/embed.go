// Package deploy holds the installation manifests (CRD, RBAC, webhook configurations,
// kustomize base and overlays) and embeds them for the programs and tests that install or
// evaluate them, so that a binary needs no checkout: `flink-admission dev` takes its webhook
// configurations and samples from here, and hack/installer renders the overlays from here.
package deploy

import (
	"embed"
	"io/fs"
)

// CRD is the generated FlinkCluster CustomResourceDefinition (YAML), as controller-gen
// renders it from api/v1beta1.
//
//go:embed crd/flinkoperator.k8s.io_flinkclusters.yaml
var CRD []byte

// Webhooks is deploy/base/webhooks.yaml: the Mutating- and ValidatingWebhookConfiguration.
//
//go:embed base/webhooks.yaml
var Webhooks []byte

// kustomizations holds every directory a user can build or apply, with the files they refer
// to, under their paths relative to deploy/.
//
//go:embed crd/*.yaml base/*.yaml overlays components samples/*.yaml
var kustomizations embed.FS

// Files is deploy/ as kustomize sees it: crd/, base/, overlays/, components/ and samples/, each file at
// its path relative to deploy/ (for example "overlays/self-signed/kustomization.yaml").
func Files() fs.FS { return kustomizations }

// Sample returns one of deploy/samples (for example "deployment-mode.yaml").
func Sample(name string) ([]byte, error) {
	return fs.ReadFile(kustomizations, "samples/"+name)
}
