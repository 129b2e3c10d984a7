package webhook

// The URL paths the webhook server serves. The deploy manifests (webhook
// configurations) and the tests use these constants, so a rename cannot leave
// the API server calling a path nobody serves.
const (
	// MutatePath is the path of the mutating (defaulting) webhook for FlinkCluster.
	MutatePath = "/mutate-flinkoperator-k8s-io-v1beta1-flinkcluster"
	// ValidatePath is the path of the validating webhook for FlinkCluster.
	ValidatePath = "/validate-flinkoperator-k8s-io-v1beta1-flinkcluster"
	// ValidateWarnPath is the path of the staged validating webhook for FlinkCluster: the
	// webhook configurations send it the writes of namespaces labelled
	// policy.EnforcementLabel=policy.EnforcementWarn, whose denials by rules only the
	// webhook enforces it turns into warnings (policy.Stage).
	ValidateWarnPath = "/validate-flinkoperator-k8s-io-v1beta1-flinkcluster-warn"
)
