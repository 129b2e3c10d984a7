package webhook

// The messages of the denials the transport itself gives (the policy's own denials carry
// the policy's field errors). They are named here so that tests and documentation quote
// one text.
const (
	msgNoRequest            = "the admission review has no request"
	msgNoUID                = "the admission request has no uid"
	msgNoResource           = "the admission request has no resource"
	msgWrongResourceFmt     = "this webhook admits flinkclusters.flinkoperator.k8s.io/v1beta1 only, not %s"
	msgSubResourceFmt       = "this webhook admits flinkclusters only, not the %s subresource"
	msgWrongKindFmt         = "this webhook admits kind FlinkCluster (flinkoperator.k8s.io/v1beta1) only, not %s"
	msgUnsupportedOpFmt     = "operation %q is not supported: this webhook admits CREATE and UPDATE only"
	msgNoObject             = "the admission request has no object"
	msgNoOldObject          = "the UPDATE request has no old object"
	msgObjectUndecodableFmt = "the object is not a valid FlinkCluster: %v"
	msgOldUndecodableFmt    = "the old object is not a valid FlinkCluster: %v"
	msgMethodFmt            = "method %s is not allowed: admission reviews are sent with POST"
	msgContentTypeFmt       = "content type %q is not supported: admission reviews are sent as application/json"
	msgTooLargeFmt          = "the request body is larger than the limit of %d bytes"
	msgEmptyBody            = "the request body is empty"
	msgNoBudgetFmt          = "the webhook is reading as many request bodies as its memory budget allows (%d bytes across all connections): retry"
	msgUnreadableFmt        = "reading the request body: %v"
	msgNotAReviewFmt        = "the body is not an AdmissionReview: %v"
)
