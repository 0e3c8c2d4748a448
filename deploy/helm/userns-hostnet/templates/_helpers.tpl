{{/*
The installer image, its tag defaulting to the chart's appVersion.
*/}}
{{- define "userns-hostnet.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/*
The systemd units the distribution's containerd restarts with, the first
active one restarted: an agent's unit before a server's. Empty for k8s
(the daemon's own unit, deploy's default).
*/}}
{{- define "userns-hostnet.units" -}}
{{- $units := dict "k8s" "" "k3s" "k3s-agent k3s" "rke2" "rke2-agent rke2-server" "k0s" "k0sworker k0scontroller" "microk8s" "snap.microk8s.daemon-containerd.service" -}}
{{- if not (hasKey $units .Values.distribution) -}}
{{- fail (printf "distribution: %q is not one of k8s, k3s, rke2, k0s, microk8s" .Values.distribution) -}}
{{- end -}}
{{- get $units .Values.distribution -}}
{{- end -}}

{{/*
The containerd config file the distribution's containerd reads, and which
deploy edits (k3s and RKE2: the template they generate it from).
*/}}
{{- define "userns-hostnet.daemonConfig" -}}
{{- if .Values.daemonConfig -}}
{{ .Values.daemonConfig }}
{{- else -}}
{{- $configs := dict "k8s" "" "k3s" "/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl" "rke2" "/var/lib/rancher/rke2/agent/etc/containerd/config.toml.tmpl" "k0s" "/etc/k0s/containerd.toml" "microk8s" "/var/snap/microk8s/current/args/containerd-template.toml" -}}
{{- get $configs .Values.distribution -}}
{{- end -}}
{{- end -}}

{{/*
USERNS_HOSTNET_DAEMON: named on k8s when `daemon` is not auto; containerd
on the other distributions, whose containerd socket is not where deploy
looks for one.
*/}}
{{- define "userns-hostnet.daemon" -}}
{{- if not (has .Values.daemon (list "auto" "containerd" "crio")) -}}
{{- fail (printf "daemon: %q is not one of auto, containerd, crio" .Values.daemon) -}}
{{- end -}}
{{- if eq .Values.distribution "k8s" -}}
{{- if ne .Values.daemon "auto" }}{{ .Values.daemon }}{{ end -}}
{{- else if eq .Values.daemon "crio" -}}
{{- fail (printf "daemon: crio is for distribution k8s only; %s runs its own containerd" .Values.distribution) -}}
{{- else -}}
containerd
{{- end -}}
{{- end -}}

{{/*
The restart: the operator's command; else one unit by name; else the
first active of the distribution's units, by a host shell command line.
*/}}
{{- define "userns-hostnet.restartEnv" -}}
{{- $units := include "userns-hostnet.units" . | splitList " " | compact -}}
{{- if .Values.restartCommand }}
- name: USERNS_HOSTNET_RESTART_COMMAND
  value: {{ .Values.restartCommand | quote }}
{{- else if eq (len $units) 1 }}
- name: USERNS_HOSTNET_UNIT
  value: {{ first $units | quote }}
{{- else if $units }}
- name: USERNS_HOSTNET_RESTART_COMMAND
  value: {{ printf "for unit in %s; do if systemctl is-active --quiet \"$unit\"; then exec systemctl restart \"$unit\"; fi; done; echo \"none of %s is active\" >&2; exit 1" (join " " $units) (join ", " $units) | quote }}
{{- end }}
{{- end -}}

{{/*
The environment `userns-hostnet deploy` reads (`deploy --help` names each
variable): the installer's and the cleanup's are the same, so that the
undo takes out the handler and binaries the install put there.
*/}}
{{- define "userns-hostnet.env" -}}
{{- $daemon := include "userns-hostnet.daemon" . -}}
{{- $config := include "userns-hostnet.daemonConfig" . -}}
- name: NODE_NAME
  valueFrom:
    fieldRef:
      fieldPath: spec.nodeName
- name: USERNS_HOSTNET_HOST_ROOT
  value: /host
- name: USERNS_HOSTNET_BIN_DIR
  value: {{ .Values.binDir | quote }}
- name: USERNS_HOSTNET_HANDLER
  value: {{ .Values.handler | quote }}
- name: USERNS_HOSTNET_RESTART
  value: {{ .Values.restart | toString | quote }}
{{- if $daemon }}
- name: USERNS_HOSTNET_DAEMON
  value: {{ $daemon | quote }}
{{- else }}
# Unset: the installer takes the daemon whose socket the node has
# (containerd or crio).
{{- end }}
{{- if $config }}
- name: USERNS_HOSTNET_DAEMON_CONFIG
  value: {{ $config | quote }}
{{- end }}
{{- include "userns-hostnet.restartEnv" . }}
{{- end -}}

{{/*
Where the installer and the cleanup run: every Linux node by default,
whatever its taints.
*/}}
{{- define "userns-hostnet.placement" -}}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- end -}}

{{/*
The namespace of every namespaced object: the release's (`helm install -n
NAMESPACE`), unless namespace.name names another.
*/}}
{{- define "userns-hostnet.namespace" -}}
{{- .Values.namespace.name | default .Release.Namespace -}}
{{- end -}}

{{/*
The chart makes the namespace only when it is not the release's: Helm
makes that one (--create-namespace) and keeps the release in it.
*/}}
{{- define "userns-hostnet.createNamespace" -}}
{{- if and .Values.namespace.create (ne (include "userns-hostnet.namespace" .) .Release.Namespace) }}true{{ end -}}
{{- end -}}

{{/*
An upgrade that would move the objects of a release out of the namespace
earlier versions of this chart made by default, userns-hostnet-system,
fails: Helm would delete that namespace, and everything in it, once the
new objects were made. `helm upgrade --reuse-values` keeps it (the
release's earlier defaults), as does `--set
namespace.name=userns-hostnet-system`. Only a real upgrade asks the
cluster; `helm template` renders as given.
*/}}
{{- define "userns-hostnet.keepNamespace" -}}
{{- $earlier := "userns-hostnet-system" -}}
{{- if and .Release.IsUpgrade (ne (include "userns-hostnet.namespace" .) $earlier) -}}
{{- $ns := lookup "v1" "Namespace" "" $earlier -}}
{{- $by := dig "metadata" "annotations" dict $ns -}}
{{- if and (eq (get $by "meta.helm.sh/release-name" | toString) .Release.Name) (eq (get $by "meta.helm.sh/release-namespace" | toString) .Release.Namespace) -}}
{{- fail (printf "namespace.name: the objects of release %s are in %s, which it made (the default of earlier versions of this chart); upgrading would move them to %s and delete %s with everything in it: upgrade with --reuse-values or --set namespace.name=%s to keep them there, or uninstall first to move them" .Release.Name $earlier (include "userns-hostnet.namespace" .) $earlier $earlier) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The recommended labels of every object (and of the pods), from a dict:
root (the chart's context), component, and name where an object keeps
the app.kubernetes.io/name its selector has always matched (the
DaemonSets and the uninstall Job, and their pods: a DaemonSet's selector
cannot change), else userns-hostnet.
*/}}
{{- define "userns-hostnet.labels" -}}
{{- $ := .root -}}
app.kubernetes.io/name: {{ .name | default "userns-hostnet" }}
app.kubernetes.io/instance: {{ $.Release.Name }}
app.kubernetes.io/version: {{ $.Chart.AppVersion | quote }}
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/managed-by: {{ $.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" $.Chart.Name $.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}
