// Package policyreport is the test kit's PolicyReport CRD (wgpolicyk8s.io/v1alpha2), for the
// tests of the audit's reports on a real API server; see crd.yaml.
package policyreport

import _ "embed"

// CRD is the CustomResourceDefinition, as YAML for kubectl apply.
//
//go:embed crd.yaml
var CRD []byte
