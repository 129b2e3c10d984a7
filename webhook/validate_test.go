package webhook

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/policy"
)

// TestValidate posts AdmissionReviews to the validating webhook and checks the verdict, the
// field path and type of every cause of a denial, and the warnings.
func TestValidate(t *testing.T) {
	tests := []struct {
		name     string
		req      *admissionv1.AdmissionRequest
		allowed  bool
		causes   []string // "field: type", sorted
		warnings []string
	}{
		{
			name:    "allow: valid job cluster create",
			req:     request(admissionv1.Create, jobCluster(), nil),
			allowed: true,
		},
		{
			name:    "allow: valid Deployment application cluster create",
			req:     request(admissionv1.Create, deploymentCluster(), nil),
			allowed: true,
		},
		{
			name:    "allow: update changing a flink property",
			req:     request(admissionv1.Update, set(jobCluster(), "spec.flinkProperties.taskmanager\\.numberOfTaskSlots", "4"), jobCluster()),
			allowed: true,
		},
		{
			name:    "allow: create of an object the mutating webhook never saw (no defaults)",
			req:     request(admissionv1.Create, del(del(jobCluster(), "spec.jobManager"), "spec.taskManager.replicas"), nil),
			allowed: true,
		},
		{
			name: "deny: deploymentType Deployment without application mode and HA",
			req: request(admissionv1.Create,
				del(del(set(deploymentCluster(), "spec.job.mode", "Detached"),
					"spec.flinkProperties.high-availability\\.type"),
					"spec.flinkProperties.high-availability\\.storageDir"), nil),
			causes: []string{
				"spec.flinkProperties[high-availability.storageDir]: FieldValueRequired",
				"spec.flinkProperties[high-availability.type]: FieldValueRequired",
				"spec.job.mode: FieldValueInvalid",
			},
		},
		{
			name:   "deny: deploymentType changed on update",
			req:    request(admissionv1.Update, del(deploymentCluster(), "spec.jobManager.deploymentType"), deploymentCluster()),
			causes: []string{"spec.jobManager.deploymentType: FieldValueForbidden"},
		},
		{
			name:   "deny: name that is not a DNS-1035 label",
			req:    request(admissionv1.Create, set(jobCluster(), "metadata.name", "Word_Count"), nil),
			causes: []string{"metadata.name: FieldValueInvalid"},
		},
		{
			name:   "deny: cancelRequested true on create",
			req:    request(admissionv1.Create, set(jobCluster(), "spec.job.cancelRequested", true), nil),
			causes: []string{"spec.job.cancelRequested: FieldValueForbidden"},
		},
		{
			name:     "warn: legacy high-availability key beside high-availability.type",
			req:      request(admissionv1.Create, set(deploymentCluster(), "spec.flinkProperties.high-availability", "zookeeper"), nil),
			allowed:  true,
			warnings: []string{policy.WarningLegacyHAKeyIgnored},
		},
		{
			name: "deny and warn: the warnings of a denied object reach the client too",
			req: request(admissionv1.Create,
				set(set(deploymentCluster(), "spec.flinkProperties.high-availability", "zookeeper"), "spec.jobManager.replicas", int64(2)), nil),
			causes:   []string{"spec.jobManager.replicas: FieldValueInvalid"},
			warnings: []string{policy.WarningLegacyHAKeyIgnored},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := post(t, testHandlers.Validate, reviewBody(tt.req))
			if a.code != http.StatusOK {
				t.Fatalf("HTTP status %d, want 200: %s", a.code, a.body)
			}
			resp := a.response(t)
			if resp.UID != tt.req.UID {
				t.Errorf("uid %q, want the request's %q", resp.UID, tt.req.UID)
			}
			if resp.Allowed != tt.allowed {
				t.Fatalf("allowed %v, want %v: %s", resp.Allowed, tt.allowed, a.body)
			}
			if diff := cmp.Diff(tt.warnings, resp.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if tt.allowed {
				return
			}
			st := resp.Result
			if st.Code != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid {
				t.Errorf("status %d %s, want 422 Invalid", st.Code, st.Reason)
			}
			if d := st.Details; d == nil || d.Group != "flinkoperator.k8s.io" || d.Kind != "FlinkCluster" || d.Name == "" {
				t.Errorf("status details %+v, want group flinkoperator.k8s.io, kind FlinkCluster and the name", d)
			}
			if diff := cmp.Diff(tt.causes, causes(resp)); diff != "" {
				t.Errorf("causes (-want +got):\n%s\nstatus message: %s", diff, st.Message)
			}
		})
	}
}

// TestValidateDryRun checks that a dry-run review gets exactly the answer of the same
// review without dry-run: the verdict, the causes, the warnings, byte for byte.
func TestValidateDryRun(t *testing.T) {
	reqs := map[string]*admissionv1.AdmissionRequest{
		"allowed create": request(admissionv1.Create, jobCluster(), nil),
		"denied create":  request(admissionv1.Create, set(deploymentCluster(), "spec.job.mode", "Detached"), nil),
		"warned create":  request(admissionv1.Create, set(deploymentCluster(), "spec.flinkProperties.high-availability", "zookeeper"), nil),
		"denied update":  request(admissionv1.Update, set(jobCluster(), "spec.jobManager.deploymentType", "Deployment"), jobCluster()),
	}
	for name, req := range reqs {
		t.Run(name, func(t *testing.T) {
			real := post(t, testHandlers.Validate, reviewBody(req))
			dry := *req
			dry.DryRun = ptr.To(true)
			dryRun := post(t, testHandlers.Validate, reviewBody(&dry))
			if real.code != dryRun.code || string(real.body) != string(dryRun.body) {
				t.Errorf("dry-run answer differs:\nreal:    %d %s\ndry-run: %d %s", real.code, real.body, dryRun.code, dryRun.body)
			}
			// And again, in the other order: no request leaves anything behind.
			again := post(t, testHandlers.Validate, reviewBody(req))
			if string(again.body) != string(real.body) {
				t.Errorf("the same review got another answer after a dry-run:\n%s\n%s", real.body, again.body)
			}
		})
	}
}

// TestValidateNoDuplicateCauses checks that a violation is reported once, also where the
// CRD's CEL rules check the same (the name and the Deployment rules).
func TestValidateNoDuplicateCauses(t *testing.T) {
	// Both the policy and the CRD's CEL rules check the name and the Deployment rules.
	o := set(set(deploymentCluster(), "metadata.name", "Word_Count"), "spec.job.mode", "Detached")
	resp := post(t, testHandlers.Validate, reviewBody(request(admissionv1.Create, o, nil))).response(t)
	if resp.Allowed {
		t.Fatal("allowed, want denied")
	}
	seen := map[string]int{}
	for _, c := range resp.Result.Details.Causes {
		seen[c.Field+" "+string(c.Type)]++
	}
	for k, n := range seen {
		if n > 1 {
			t.Errorf("cause %q reported %d times", k, n)
		}
	}
	if len(seen) < 2 {
		t.Errorf("causes %v, want metadata.name and spec.job.mode", seen)
	}
}
