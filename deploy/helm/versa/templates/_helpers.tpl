{{/*
Names, labels and the decisions every template shares: which storage, how many replicas, where
the certificates come from. The checks that refuse a values combination live in versa.validate.
*/}}

{{- define "versa.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The object name prefix: the release name, plus the chart name unless already in it. */}}
{{- define "versa.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "versa.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "versa.selectorLabels" -}}
app.kubernetes.io/name: {{ include "versa.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "versa.labels" -}}
helm.sh/chart: {{ include "versa.chart" . }}
{{ include "versa.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: apiserver
app.kubernetes.io/part-of: versa
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "versa.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "versa.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "versa.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* "etcd" when etcd endpoints are given, else "embedded". */}}
{{- define "versa.storage" -}}
{{- if .Values.storage.etcd.endpoints }}etcd{{ else }}embedded{{ end }}
{{- end }}

{{/* Replicas: the value, else 1 (embedded) or 2 (etcd). */}}
{{- define "versa.replicas" -}}
{{- if kindIs "invalid" .Values.replicas }}
{{- if eq (include "versa.storage" .) "etcd" }}2{{ else }}1{{ end }}
{{- else }}
{{- int .Values.replicas }}
{{- end }}
{{- end }}

{{/* The Secret holding tls.crt, tls.key and ca.crt (secret and certManager modes). */}}
{{- define "versa.tlsSecretName" -}}
{{- if eq .Values.certificates.mode "secret" }}
{{- .Values.certificates.secret.name }}
{{- else }}
{{- printf "%s-serving-cert" (include "versa.fullname" .) }}
{{- end }}
{{- end }}

{{/* The Secret versa keeps its generated CA in (generated mode). */}}
{{- define "versa.caSecretName" -}}
{{- default (printf "%s-serving-ca" (include "versa.fullname" .)) .Values.certificates.generated.caSecretName }}
{{- end }}

{{/* The serving certificate's DNS names: how kube-apiserver and in-cluster clients reach it. */}}
{{- define "versa.dnsNames" -}}
{{- $svc := include "versa.fullname" . }}
{{- $ns := .Release.Namespace -}}
- {{ $svc }}
- {{ $svc }}.{{ $ns }}
- {{ $svc }}.{{ $ns }}.svc
- {{ $svc }}.{{ $ns }}.svc.cluster.local
{{- end }}

{{/* Refuses values combinations that cannot work, with a message saying what to change. */}}
{{- define "versa.validate" -}}
{{- $storage := include "versa.storage" . }}
{{- $replicas := include "versa.replicas" . | int }}
{{- if and (eq $storage "embedded") (gt $replicas 1) }}
{{- fail (printf "replicas=%d needs etcd storage: embedded storage is a single-writer database on one PersistentVolume and runs exactly one replica. Set storage.etcd.endpoints to run several replicas, or replicas=1." $replicas) }}
{{- end }}
{{- $mode := .Values.certificates.mode }}
{{- if not (has $mode (list "generated" "secret" "certManager")) }}
{{- fail (printf "certificates.mode=%q: must be generated, secret or certManager" $mode) }}
{{- end }}
{{- if and (eq $mode "secret") (not .Values.certificates.secret.name) }}
{{- fail "certificates.mode=secret needs certificates.secret.name: an existing Secret with tls.crt, tls.key and ca.crt" }}
{{- end }}
{{- $tls := .Values.storage.etcd.tls }}
{{- if and $tls.existingSecret (not $tls.caKey) }}
{{- fail "storage.etcd.tls.caKey must name the CA bundle's key in storage.etcd.tls.existingSecret" }}
{{- end }}
{{- if ne (empty $tls.certKey) (empty $tls.keyKey) }}
{{- fail "storage.etcd.tls.certKey and storage.etcd.tls.keyKey go together: set both for a client certificate, or neither" }}
{{- end }}
{{- end }}

{{/* The versa serve command line. */}}
{{- define "versa.args" -}}
- serve
- --data-dir=/var/lib/versa
- --listen=0.0.0.0:{{ .Values.server.port }}
{{- if eq (include "versa.storage" .) "etcd" }}
- --storage=etcd
- --etcd-endpoints={{ join "," .Values.storage.etcd.endpoints }}
- --storage-prefix={{ .Values.storage.etcd.prefix }}
- --watch-cache={{ ne .Values.storage.etcd.watchCache false }}
{{- with .Values.storage.etcd.tls }}
{{- if .existingSecret }}
- --etcd-cafile=/etc/versa/etcd/{{ .caKey }}
{{- if .certKey }}
- --etcd-certfile=/etc/versa/etcd/{{ .certKey }}
- --etcd-keyfile=/etc/versa/etcd/{{ .keyKey }}
{{- end }}
{{- end }}
{{- end }}
- --leader-elect={{ .Values.leaderElection.enabled }}
{{- if .Values.leaderElection.enabled }}
- --leader-elect-lease-duration={{ .Values.leaderElection.leaseDuration }}
- --leader-elect-renew-deadline={{ .Values.leaderElection.renewDeadline }}
- --leader-elect-retry-period={{ .Values.leaderElection.retryPeriod }}
- --leader-elect-resource-lock=leases
- --leader-elect-resource-name={{ include "versa.fullname" . }}
- --leader-elect-resource-namespace={{ .Release.Namespace }}
{{- end }}
{{- else }}
- --storage=embedded
{{- end }}
{{- if eq .Values.certificates.mode "generated" }}
- --serving-ca-secret={{ include "versa.caSecretName" . }}
{{- else }}
- --tls-cert-file=/etc/versa/tls/tls.crt
- --tls-private-key-file=/etc/versa/tls/tls.key
- --apiservice-ca-file=/etc/versa/tls/ca.crt
{{- end }}
- --service-name={{ include "versa.fullname" . }}
- --service-namespace={{ .Release.Namespace }}
- --service-port={{ .Values.service.port }}
- --conversion-webhook-timeout={{ .Values.server.conversionWebhookTimeout }}
- --auto-migrate={{ .Values.server.autoMigrate }}
- --migration-rate={{ .Values.server.migrationRate }}
- --log-format={{ .Values.server.logFormat }}
{{- with .Values.extraArgs }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The pod template shared by the StatefulSet (embedded) and the Deployment (etcd). */}}
{{- define "versa.podTemplate" -}}
metadata:
  labels:
    {{- include "versa.labels" . | nindent 4 }}
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with .Values.podAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  serviceAccountName: {{ include "versa.serviceAccountName" . }}
  automountServiceAccountToken: true
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds }}
  securityContext:
    {{- toYaml .Values.podSecurityContext | nindent 4 }}
  containers:
    - name: versa
      image: {{ include "versa.image" . }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      args:
        {{- include "versa.args" . | nindent 8 }}
      env:
        - name: POD_NAMESPACE
          valueFrom:
            fieldRef:
              fieldPath: metadata.namespace
        - name: POD_NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        {{- with .Values.extraEnv }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      ports:
        - name: https
          containerPort: {{ .Values.server.port }}
          protocol: TCP
      startupProbe:
        httpGet:
          path: /livez
          port: https
          scheme: HTTPS
        {{- toYaml .Values.startupProbe | nindent 8 }}
      livenessProbe:
        httpGet:
          path: /livez
          port: https
          scheme: HTTPS
        {{- toYaml .Values.livenessProbe | nindent 8 }}
      readinessProbe:
        httpGet:
          path: /readyz
          port: https
          scheme: HTTPS
        {{- toYaml .Values.readinessProbe | nindent 8 }}
      resources:
        {{- toYaml .Values.resources | nindent 8 }}
      securityContext:
        {{- toYaml .Values.securityContext | nindent 8 }}
      volumeMounts:
        - name: data
          mountPath: /var/lib/versa
        - name: tmp
          mountPath: /tmp
        {{- if ne .Values.certificates.mode "generated" }}
        - name: serving-cert
          mountPath: /etc/versa/tls
          readOnly: true
        {{- end }}
        {{- if and (eq (include "versa.storage" .) "etcd") .Values.storage.etcd.tls.existingSecret }}
        - name: etcd-tls
          mountPath: /etc/versa/etcd
          readOnly: true
        {{- end }}
  volumes:
    {{- if eq (include "versa.storage" .) "etcd" }}
    {{- /* etcd holds the data; the data directory is scratch space. */}}
    - name: data
      emptyDir: {}
    {{- end }}
    {{- /* TMPDIR: the kept /openapi/v2 document and its protobuf form (about 10 KiB per
    definition, twice that while a replaced one is still being sent) and the definitions'
    deflated schemas (about 11 KiB per definition, at most twice that before a compaction):
    1Gi holds over 20,000 distinct definitions at the worst moment; a pod whose emptyDir
    outgrows its limit is evicted. */}}
    - name: tmp
      emptyDir:
        sizeLimit: 1Gi
    {{- if ne .Values.certificates.mode "generated" }}
    - name: serving-cert
      secret:
        secretName: {{ include "versa.tlsSecretName" . }}
    {{- end }}
    {{- if and (eq (include "versa.storage" .) "etcd") .Values.storage.etcd.tls.existingSecret }}
    - name: etcd-tls
      secret:
        secretName: {{ .Values.storage.etcd.tls.existingSecret }}
    {{- end }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
