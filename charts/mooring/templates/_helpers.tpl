{{/* Labels every object of the release carries besides its own. */}}
{{- define "mooring.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: mooring
{{- end }}

{{/* Annotations of CRDs: keep them (and every object of theirs) on uninstall. */}}
{{- define "mooring.crdAnnotations" -}}
{{- if .Values.crds.keep }}
helm.sh/resource-policy: keep
{{- end }}
{{- end }}

{{/* Annotations of the objects whose CA bundle cert-manager injects in cert-manager mode.
     In self mode the operator injects it; no template ever sets caBundle, so an upgrade
     cannot blank it. */}}
{{- define "mooring.caInjection" -}}
{{- if eq .Values.webhook.certManagement "cert-manager" }}
cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/mooring-serving-cert
{{- end }}
{{- end }}

{{- define "mooring.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

{{- define "mooring.portalImage" -}}
{{- if .Values.portal.image.digest -}}
{{ .Values.portal.image.repository }}@{{ .Values.portal.image.digest }}
{{- else -}}
{{ .Values.portal.image.repository }}:{{ .Values.portal.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

{{- /* The portal's namespace: portal.namespace, else the release namespace. */ -}}
{{- define "mooring.portalNamespace" -}}
{{ .Values.portal.namespace | default .Release.Namespace }}
{{- end }}

{{- /* The namespaces no user may be granted, as the CEL list the portal's
     ValidatingAdmissionPolicy checks Users against: the portal's own and its users',
     the operator's (the release's) and portal.protectedNamespaces, as the portal's
     --operator-namespace and --protected-namespaces say. kube-* is in the policy. */ -}}
{{- define "mooring.portalProtectedNamespaces" -}}
{{- $ns := list (include "mooring.portalNamespace" .) "mooring-portal-users" .Release.Namespace -}}
{{- $ns = concat $ns (.Values.portal.protectedNamespaces | default list) -}}
[{{ range $i, $n := $ns }}{{ if $i }}, {{ end }}'{{ $n }}'{{ end }}]
{{- end }}
