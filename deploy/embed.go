// Package deploy holds the installation manifests (CRD, RBAC, webhook configurations,
// kustomize base and overlays) and embeds the generated CRD for the programs and tests that
// install or evaluate it.
package deploy

import _ "embed"

// CRD is the generated FlinkCluster CustomResourceDefinition (YAML), as controller-gen
// renders it from api/v1beta1.
//
//go:embed crd/flinkoperator.k8s.io_flinkclusters.yaml
var CRD []byte
