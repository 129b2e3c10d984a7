// Package v1beta1 holds the FlinkCluster API (flinkoperator.k8s.io/v1beta1), schema-compatible
// with the flink-on-k8s-operator, plus spec.jobManager.deploymentType and the JobManager
// shutdown settings. The Go types are the one source of the CRD schema: controller-gen
// renders them, with their markers and CEL rules, into deploy/crd.
//
// +kubebuilder:object:generate=true
// +groupName=flinkoperator.k8s.io
package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of FlinkCluster.
	GroupVersion = schema.GroupVersion{Group: "flinkoperator.k8s.io", Version: "v1beta1"}

	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Resource is the plural resource name of FlinkCluster, as admission requests carry it.
const Resource = "flinkclusters"

// Kind is the kind name of FlinkCluster.
const Kind = "FlinkCluster"
