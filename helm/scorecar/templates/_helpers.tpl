{{/*
Named templates. The ones an agent chart includes in sidecar mode take the scorecar subchart's
context, `.Subcharts.scorecar`:
  scorecar.container      the container (under containers)
  scorecar.nativeSidecar  the same with restartPolicy: Always and a startup probe (under
                          initContainers; Kubernetes >= 1.28)
  scorecar.volumes        its volumes (under volumes)
  scorecar.checksum       the pod annotation that rolls pods when the config changes
*/}}

{{- define "scorecar.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "scorecar.fullname" -}}
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

{{- define "scorecar.selectorLabels" -}}
app.kubernetes.io/name: {{ include "scorecar.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "scorecar.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "scorecar.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: scorer
{{- end }}

{{- define "scorecar.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "scorecar.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "scorecar.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{- define "scorecar.statefulset" -}}
{{- if and .Values.persistence.enabled (not .Values.persistence.existingClaim) }}true{{ end }}
{{- end }}

{{/* A Kubernetes memory quantity (1Gi, 512Mi, 1G, 1048576) in MiB, rounded down. */}}
{{- define "scorecar.quantityMiB" -}}
{{- $q := toString . }}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" $q }}
{{- $unit := trimPrefix $num $q }}
{{- $factors := dict "" 1 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 }}
{{- if not (hasKey $factors $unit) }}
{{- fail (printf "resources.limits.memory %q: unknown unit %q (use Ki, Mi, Gi, Ti, k, M, G or T)" $q $unit) }}
{{- end }}
{{- divf (mulf (float64 $num) (get $factors $unit)) 1048576 | floor | int }}
{{- end }}

{{/* The scorecar config as a dict: values.config over what the chart fills in. */}}
{{- define "scorecar.configDict" -}}
{{- $p := .Values.ports }}
{{- $defaults := dict
    "receivers" (dict
      "grpc" (dict "endpoint" (printf "0.0.0.0:%v" (index $p "otlp").containerPort))
      "http" (dict "endpoint" (printf "0.0.0.0:%v" (index $p "otlp-http").containerPort)))
    "storage" (dict "path" .Values.dataDir)
    "exporters" (dict "prometheus" (dict "endpoint" (printf "0.0.0.0:%v" (index $p "metrics").containerPort))) }}
{{- $limit := dig "limits" "memory" "" (.Values.resources | default dict) }}
{{- if and .Values.useMemoryLimit $limit }}
{{- $mib := include "scorecar.quantityMiB" $limit | int }}
{{- $_ := set $defaults "limits" (dict "memory_mib" (div (mul $mib (int .Values.memoryLimitPercent)) 100)) }}
{{- end }}
{{- $config := mustMergeOverwrite $defaults (deepCopy (.Values.config | default dict)) }}
{{- if hasKey ($config.judge | default dict) "api_key" }}
{{- fail "config.judge.api_key: the judge's API key is never put in values; create a Secret and set judge.existingSecret (or use extraEnvsFrom)" }}
{{- end }}
{{- toJson $config }}
{{- end }}

{{/* ConfigMap data: config.yaml as JSON (a subset of YAML; large numbers stay integers). */}}
{{- define "scorecar.configData" -}}
config.yaml: |
{{ include "scorecar.configDict" . | fromJson | toPrettyJson | indent 2 }}
{{- end }}

{{- define "scorecar.checksum" -}}
checksum/config: {{ printf "%s\n%s" (include "scorecar.configData" .) (toJson .Values.scorerModules.files) | sha256sum }}
{{- end }}

{{- define "scorecar.scorerModulesConfigMap" -}}
{{- if .Values.scorerModules.existingConfigMap }}
{{- .Values.scorerModules.existingConfigMap }}
{{- else if .Values.scorerModules.files }}
{{- printf "%s-scorers" (include "scorecar.fullname" .) }}
{{- end }}
{{- end }}

{{- define "scorecar.containerSpec" -}}
{{- $ := .ctx }}
{{- $v := $.Values }}
{{- $config := include "scorecar.configDict" $ | fromJson }}
{{- $metricsPort := (index $v.ports "metrics").containerPort -}}
- name: {{ if eq $v.mode "sidecar" }}{{ $v.sidecar.containerName }}{{ else }}scorecar{{ end }}
  image: {{ include "scorecar.image" $ | quote }}
  imagePullPolicy: {{ $v.image.pullPolicy }}
  {{- if .native }}
  restartPolicy: Always
  {{- end }}
  args:
    - -c
    - /etc/scorecar/config.yaml
    - --log-format
    - {{ $v.logFormat | quote }}
    - --grace
    - {{ $v.grace | quote }}
    {{- range $v.extraArgs }}
    - {{ . | quote }}
    {{- end }}
  ports:
    {{- range $key := list "otlp" "otlp-http" "metrics" }}
    {{- $port := index $v.ports $key }}
    - name: {{ $port.name }}
      containerPort: {{ $port.containerPort }}
      protocol: {{ $port.protocol }}
    {{- end }}
  env:
    - name: SCORECAR_STORAGE__PATH
      value: {{ $config.storage.path | default $v.dataDir | quote }}
    - name: TMPDIR
      value: {{ $v.dataDir | quote }}
    {{- if $v.judge.existingSecret }}
    - name: {{ dig "judge" "api_key_env" "ANTHROPIC_API_KEY" $config }}
      valueFrom:
        secretKeyRef:
          name: {{ $v.judge.existingSecret }}
          key: {{ $v.judge.existingSecretKey }}
    {{- end }}
    {{- if include "scorecar.scorerModulesConfigMap" $ }}
    - name: PYTHONPATH
      value: {{ $v.scorerModules.mountPath | quote }}
    {{- end }}
    {{- with $v.extraEnvs }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with $v.extraEnvsFrom }}
  envFrom:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if or .native $v.startupProbe.enabled }}
  startupProbe:
    httpGet:
      path: /readyz
      port: {{ $metricsPort }}
    periodSeconds: {{ $v.startupProbe.periodSeconds }}
    timeoutSeconds: {{ $v.startupProbe.timeoutSeconds }}
    failureThreshold: {{ $v.startupProbe.failureThreshold }}
  {{- end }}
  livenessProbe:
    httpGet:
      path: /healthz
      port: {{ $metricsPort }}
    {{- toYaml $v.livenessProbe | nindent 4 }}
  readinessProbe:
    httpGet:
      path: /readyz
      port: {{ $metricsPort }}
    {{- toYaml $v.readinessProbe | nindent 4 }}
  {{- with $v.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.securityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  volumeMounts:
    - name: scorecar-config
      mountPath: /etc/scorecar
      readOnly: true
    - name: scorecar-data
      mountPath: {{ $v.dataDir }}
    {{- if include "scorecar.scorerModulesConfigMap" $ }}
    - name: scorecar-scorers
      mountPath: {{ $v.scorerModules.mountPath }}
      readOnly: true
    {{- end }}
    {{- with $v.extraVolumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end }}

{{- define "scorecar.container" -}}
{{ include "scorecar.containerSpec" (dict "ctx" . "native" false) }}
{{- end }}

{{- define "scorecar.nativeSidecar" -}}
{{ include "scorecar.containerSpec" (dict "ctx" . "native" true) }}
{{- end }}

{{- define "scorecar.volumes" -}}
- name: scorecar-config
  configMap:
    name: {{ include "scorecar.fullname" . }}
{{- if not (include "scorecar.statefulset" .) }}
- name: scorecar-data
  {{- if .Values.persistence.existingClaim }}
  persistentVolumeClaim:
    claimName: {{ .Values.persistence.existingClaim }}
  {{- else }}
  {{- $ed := dict }}
  {{- with .Values.persistence.emptyDir.sizeLimit }}{{ $_ := set $ed "sizeLimit" . }}{{ end }}
  {{- with .Values.persistence.emptyDir.medium }}{{ $_ := set $ed "medium" . }}{{ end }}
  emptyDir: {{ toJson $ed }}
  {{- end }}
{{- end }}
{{- with include "scorecar.scorerModulesConfigMap" . }}
- name: scorecar-scorers
  configMap:
    name: {{ . }}
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* PromQL selector: the chart's matchers plus prometheusRule.selector. */}}
{{- define "scorecar.sel" -}}
{{- $parts := list }}
{{- with .matchers }}{{ $parts = append $parts . }}{{ end }}
{{- with .extra }}{{ $parts = append $parts . }}{{ end }}
{{- if $parts }}{{ printf "{%s}" (join "," $parts) }}{{ end }}
{{- end }}

{{/* Checks that no schema can make without echoing a secret value. */}}
{{- define "scorecar.validate" -}}
{{- with .Values.judge.existingSecret }}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$" .) }}
{{- fail "judge.existingSecret must be the NAME of a Secret (a lower-case DNS name), not the API key itself; the value is not shown here" }}
{{- end }}
{{- end }}
{{- end }}
