// Package crdvalidation runs the API server's validation of a CustomResourceDefinition in
// process: what the API server refuses when a CRD is created (CEL rules that do not compile,
// bad field paths, estimated costs above its limits).
//
// It is a package of its own so that only the tests and `make bench` link it: the API
// server's CRD validation brings in its conversion-webhook, egress and tracing packages
// (gRPC, OpenTelemetry), whose initialisation would cost every flink-admission process
// about 14 MB of memory for a check of a CRD that is embedded at build time and proven
// acceptable by the tests.
package crdvalidation

import (
	"context"
	"fmt"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	extvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
)

// The API server's static cost limits on the CEL rules of a CRD being created.
const (
	// StaticEstimatedCostLimit is the largest estimated cost of one rule.
	StaticEstimatedCostLimit = extvalidation.StaticEstimatedCostLimit
	// StaticEstimatedCRDCostLimit is the largest estimated total cost of all the rules of
	// one CRD schema.
	StaticEstimatedCRDCostLimit = extvalidation.StaticEstimatedCRDCostLimit
)

// Validate returns the reasons the API server would refuse to create crd, nil when it
// would accept it. crd is not modified.
func Validate(crd *apiextensionsv1.CustomResourceDefinition) error {
	crd = crd.DeepCopy()
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	internal := &apiextensionsinternal.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil); err != nil {
		return fmt.Errorf("converting the CRD: %w", err)
	}
	if errs := extvalidation.ValidateCustomResourceDefinition(context.Background(), internal); len(errs) > 0 {
		return fmt.Errorf("the API server would refuse the CRD: %w", errs.ToAggregate())
	}
	return nil
}
