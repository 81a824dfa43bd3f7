{{/*
Labels of an object of component NAME (kuota-operator, kuota-extender, ...):
the two the kustomize manifests carry, plus Helm's bookkeeping.
Call: include "kuota.labels" (dict "ctx" $ "name" "kuota-operator")
*/}}
{{- define "kuota.labels" -}}
app.kubernetes.io/part-of: kuota
{{ include "kuota.helmLabels" .ctx }}
{{- with .name }}
app.kubernetes.io/name: {{ . }}
{{- end }}
{{- end }}

{{/* Helm's bookkeeping labels (the only ones on objects the manifests leave unlabelled). */}}
{{- define "kuota.helmLabels" -}}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* Labels of the pods of component NAME: the same as the kustomize manifests'. */}}
{{- define "kuota.podLabels" -}}
app.kubernetes.io/name: {{ . }}
app.kubernetes.io/part-of: kuota
{{- end }}

{{/* The kuota image: repository:tag, the tag defaulting to the chart's appVersion. */}}
{{- define "kuota.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/* The container fields for the kuota image. */}}
{{- define "kuota.imageFields" -}}
image: {{ include "kuota.image" . }}
{{- with .Values.image.pullPolicy }}
imagePullPolicy: {{ . }}
{{- end }}
{{- end }}

{{/* The pod security context every kuota pod runs with (the image's UID). */}}
{{- define "kuota.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* The container security context every kuota container runs with. */}}
{{- define "kuota.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end }}

{{/*
Pod placement fields from a values block with nodeSelector, tolerations, affinity
(and the chart's imagePullSecrets when "pullSecrets" is given).
Call: include "kuota.placement" (dict "v" .Values.operator "pullSecrets" .Values.imagePullSecrets)
*/}}
{{- define "kuota.placement" -}}
{{- with .pullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .v.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .v.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Names of the webhook's Service, as the API server and the certificate know it. */}}
{{- define "kuota.webhookDNSNames" -}}
{{- $names := list (printf "kuota-webhook.%s.svc" .Release.Namespace) (printf "kuota-webhook.%s.svc.cluster.local" .Release.Namespace) }}
{{- if .Values.visibility.enabled }}
{{- /* The visibility API server serves the same certificate (the API server checks this name). */}}
{{- $names = append $names (printf "kuota-visibility.%s.svc" .Release.Namespace) }}
{{- end }}
{{- $host := .Values.outOfCluster.host }}
{{- if and $host (not (regexMatch "^[0-9.]+$" $host)) }}
{{- $names = append $names $host }}
{{- end }}
{{- concat $names .Values.webhook.certificate.dnsNames | toJson }}
{{- end }}

{{/* Addresses in the serving certificate: those asked for, and an out-of-cluster host's. */}}
{{- define "kuota.webhookIPAddresses" -}}
{{- $ips := .Values.webhook.certificate.ipAddresses }}
{{- $host := .Values.outOfCluster.host }}
{{- if and $host (regexMatch "^[0-9.]+$" $host) }}
{{- $ips = append $ips $host | uniq }}
{{- end }}
{{- $ips | toJson }}
{{- end }}

{{/* Where the API server calls the webhook: webhook.url, else the out-of-cluster host's
URL, else "" (the Service kuota-webhook). */}}
{{- define "kuota.webhookURL" -}}
{{- if .Values.webhook.url }}
{{- trimSuffix "/" .Values.webhook.url }}
{{- else if .Values.outOfCluster.host }}
{{- printf "https://%s:%d" .Values.outOfCluster.host (int .Values.webhook.port) }}
{{- end }}
{{- end }}

{{/*
Values that cannot work together: fail at render time with one clear line. (Types,
ranges, enums and misspelt keys are refused by values.schema.json before this.)
*/}}
{{- define "kuota.validate" -}}
{{- if and (gt (int .Values.operator.replicas) 1) (not .Values.operator.leaderElection.enabled) }}
{{- fail "operator.replicas > 1 needs operator.leaderElection.enabled: two replicas would both admit" }}
{{- end }}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.service.enabled) }}
{{- fail "metrics.serviceMonitor.enabled needs metrics.service.enabled: the ServiceMonitor selects that Service" }}
{{- end }}
{{- if and .Values.scheduler.enabled (not .Values.extender.enabled) }}
{{- fail "scheduler.enabled needs extender.enabled: the second scheduler's profile calls the extender" }}
{{- end }}
{{- end }}
