// Package policy holds the admission policy of FlinkCluster as pure functions: Default (the
// mutating webhook) and ValidateCreate / ValidateUpdate (the validating webhook), which
// return a field.ErrorList and warnings. There is no HTTP and no client here; the webhook
// package adapts these functions to admission requests.
//
// The rules come from two sources:
//
//   - the CEL rules the CRD carries (api/v1beta1 XValidation markers). The policy gives the
//     same verdict on the same field path, so that a cluster without the webhook (or with
//     the webhook failing open) is judged the same way. Rules that would reject an object
//     only because of what it already was are ratcheted: on update they become warnings.
//   - the flink-on-k8s-operator's webhook (ports, resources, memory settings, the
//     user-control annotation, job updates), which CEL cannot express or which need the
//     cluster's status and the time.
//
// Validation never assumes that Default ran: the mutating webhook may be off. Unset fields
// are read as their defaults (an unset deploymentType is Job, unset ports are the default
// ports), and no nil field panics.
package policy
