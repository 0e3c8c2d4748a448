#!/usr/bin/env bash
# Renders the kustomize manifests of deploy/ from the Helm chart
# deploy/helm/userns-hostnet, with its default values but no uninstall
# hooks (kubectl runs no hook: removal is deploy/cleanup/, the cleanup
# DaemonSet with action=cleanup) and in a namespace of their own,
# userns-hostnet-system, which they create (namespace.name: a release
# would be in the namespace kubectl's context names), one file per
# template:
#   namespace.yaml rbac.yaml daemonset.yaml runtimeclass.yaml
#   cleanup/daemonset.yaml
# into OUT (default: deploy/ of this checkout). The chart is the one source:
# edit it, then run this; crates/admin/tests/helm_chart.rs checks that
# deploy/ is what this renders. kustomization.yaml and sample-pod.yaml are
# not rendered. HELM names the helm binary (default: scripts/helm.sh's).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/deploy}
helm=${HELM:-/var/cache/userns-hostnet/helm/v4.3.2/helm}
chart=$root/deploy/helm/userns-hostnet
[ -x "$helm" ] || {
	echo "helm-manifests.sh: no helm at $helm: run \`make helm\` (scripts/helm.sh)" >&2
	exit 1
}
mkdir -p "$out/cleanup"

# helm template prints each object as `---`, `# Source: CHART/templates/F`,
# then the object and a blank line; the objects of one template go to one
# file, without those lines (`---` kept between objects of one file).
split() {
	local dir=$1
	awk -v dir="$dir" -v header="$2" '
		/^---$/ { pending = 1; blanks = 0; next }
		pending && /^# Source: / {
			file = $3; sub(".*/templates/", "", file)
			path = dir "/" file
			if (path in seen) { print "---" > path }
			else { seen[path] = 1; printf "%s", header > path }
			pending = 0; next
		}
		# Blank lines are written only when more of the object follows.
		/^$/ { blanks++; next }
		{
			for (; blanks > 0; blanks--) print "" > path
			pending = 0; print > path
		}
	'
}

header="# Rendered from deploy/helm/userns-hostnet by scripts/helm-manifests.sh
# (the chart's default values): edit the chart, then run the script.
"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/cleanup"
# Helm's own cache, config and data stay out of the home directory.
export HELM_CACHE_HOME=$tmp/cache HELM_CONFIG_HOME=$tmp/config HELM_DATA_HOME=$tmp/data
# Objects kubectl applies are not Helm's: no helm.sh/chart label, and
# managed-by names kustomize.
not_helm() {
	sed -e '/^ *helm\.sh\/chart: /d' -e 's|^\( *app\.kubernetes\.io/managed-by: \)Helm$|\1kustomize|'
}
values=(--set namespace.name=userns-hostnet-system)
"$helm" template userns-hostnet "$chart" "${values[@]}" --set undoOnUninstall=false | not_helm | split "$tmp" "$header"
"$helm" template userns-hostnet "$chart" "${values[@]}" --set action=cleanup --show-only templates/cleanup-daemonset.yaml | not_helm | split "$tmp/cleanup" "$header"
for f in namespace.yaml rbac.yaml daemonset.yaml runtimeclass.yaml; do
	mv "$tmp/$f" "$out/$f"
done
mv "$tmp/cleanup/cleanup-daemonset.yaml" "$out/cleanup/daemonset.yaml"
