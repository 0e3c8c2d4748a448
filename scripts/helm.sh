#!/usr/bin/env bash
# Builds helm v4 (crates/admin/tests/helm_chart.rs lints and renders
# deploy/helm/userns-hostnet with it) from the Go module proxy into a cache
# outside the checkout that a machine keeps:
#   $HELM_CACHE/<version>/helm
# HELM_CACHE defaults to /var/cache/userns-hostnet/helm; GOMODCACHE and
# GOCACHE stay Go's own defaults, which the same machine keeps too.
# Idempotent: a helm already there that reports its version is not built
# again. Needs Go (/usr/local/go/bin is searched).
set -euo pipefail

export PATH=$PATH:/usr/local/go/bin
version=${1:-v4.3.2}
cache=${HELM_CACHE:-/var/cache/userns-hostnet/helm}
dir=$cache/$version

case $version in
v4.*.*) ;;
*)
	echo "helm.sh: version $version is not of the form v4.MINOR.PATCH" >&2
	exit 1
	;;
esac

if [ -x "$dir/helm" ] && "$dir/helm" version --template '{{.Version}}' 2>/dev/null | grep -qx "$version"; then
	echo "helm.sh: $version cached in $dir/helm"
	exit 0
fi

command -v go >/dev/null || {
	echo "helm.sh: go is not installed (expected at /usr/local/go/bin/go)" >&2
	exit 1
}

start=$SECONDS
# Built into a scratch folder and moved: an interrupted build leaves no
# half-written binary the test would take for a good one.
rm -rf "$dir/bin.tmp"
mkdir -p "$dir/bin.tmp"
# `go install` stamps no version into helm (it reports v4.x-dev without the
# release's ldflags): set it as the release's own Makefile does.
# No symbol table or DWARF (-s -w): nothing here debugs helm, and its link
# is shorter. The caller sets the priority (make test builds it first: the
# Kubernetes tier waits for it).
ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=$version"
GOBIN=$dir/bin.tmp CGO_ENABLED=0 go install -trimpath -ldflags "$ldflags" "helm.sh/helm/v4/cmd/helm@$version"
mv "$dir/bin.tmp/helm" "$dir/helm"
rmdir "$dir/bin.tmp"
echo "helm.sh: built $version in $((SECONDS - start))s into $dir/helm"
"$dir/helm" version --template '{{.Version}}'
echo
