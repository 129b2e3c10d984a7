{{/*
Labels of every object: the ones the kustomize overlays set, and Helm's own.
*/}}
{{- define "flink-admission.labels" -}}
app.kubernetes.io/part-of: flink-admission
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/*
The pods' label, which every selector uses. Fixed, as in deploy/base: selectors are immutable.
*/}}
{{- define "flink-admission.selector" -}}
app.kubernetes.io/name: flink-admission
{{- end -}}

{{/*
The image reference: by digest when one is given.
*/}}
{{- define "flink-admission.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/*
Fails the render on settings the chart does not support.
*/}}
{{- define "flink-admission.validate" -}}
{{- if not (has .Values.certificates.mode (list "self-signed" "cert-manager")) -}}
{{- fail (printf "certificates.mode %q is not supported: use self-signed or cert-manager" .Values.certificates.mode) -}}
{{- end -}}
{{- if and .Values.priorityClass.create (hasPrefix "system-" .Values.priorityClassName) -}}
{{- fail (printf "priorityClassName %q: the system- classes exist already; set priorityClass.create=false to use one" .Values.priorityClassName) -}}
{{- end -}}
{{- if lt (int .Values.replicaCount) 1 -}}
{{- fail "replicaCount must be at least 1: the webhooks fail closed" -}}
{{- end -}}
{{- with .Values.podDisruptionBudget -}}
{{- if and .enabled (gt (int $.Values.replicaCount) 1) (not (kindIs "string" .minAvailable)) (ge (int .minAvailable) (int $.Values.replicaCount)) -}}
{{- fail (printf "podDisruptionBudget.minAvailable %v must be below replicaCount %v: the PodDisruptionBudget would block every node drain" .minAvailable $.Values.replicaCount) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
What the controller reads and writes: granted cluster-wide, or in each watched namespace.
*/}}
{{- define "flink-admission.controllerRules" -}}
- apiGroups: [flinkoperator.k8s.io]
  resources: [flinkclusters]
  verbs: [get, list, watch, update, patch]
- apiGroups: [flinkoperator.k8s.io]
  resources: [flinkclusters/status]
  verbs: [get, update, patch]
- apiGroups: [flinkoperator.k8s.io]
  resources: [flinkclusters/finalizers]
  verbs: [update]
- apiGroups: [""]
  resources: [configmaps, services]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [apps]
  resources: [deployments, statefulsets]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [batch]
  resources: [jobs]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [networking.k8s.io]
  resources: [ingresses]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [policy]
  resources: [poddisruptionbudgets]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [autoscaling]
  resources: [horizontalpodautoscalers]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch, delete]
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
- apiGroups: [events.k8s.io]
  resources: [events]
  verbs: [create, patch]
{{- end -}}

{{/*
The controller's --cluster-selector, "" without the controller: the validating webhooks'
match condition holds it between its double quotes and reads its keys (deploy/base/webhooks.yaml).
*/}}
{{- define "flink-admission.clusterSelector" -}}
{{- if .Values.controller.enabled -}}
{{ .Values.controller.clusterSelector }}
{{- end -}}
{{- end -}}
