#!/usr/bin/env bash
# Builds the Kubernetes components tests/e2e_kubernetes*.rs run, from the Go
# module proxy, into a cache outside the checkout that a machine keeps:
#   $KUBE_CACHE/<version>/bin/{kubelet,kube-apiserver,kube-controller-manager,
#       kube-scheduler,kubectl}
# for each version given; VERSION:NAME[,NAME] builds only those (default:
# v1.37.2, the control plane and the newest kubelet, and v1.35.4:kubelet,
# the newest kubelet whose UserNamespacesHostNetworkSupport works without
# NodeDeclaredFeatures, see docs/kubernetes.md).
# KUBE_CACHE defaults to /var/cache/userns-hostnet/kubernetes; GOMODCACHE and
# GOCACHE stay Go's own defaults (~/go/pkg/mod, ~/.cache/go-build), which the
# same machine keeps too.
#
# k8s.io/kubernetes cannot be built with `go install ...@version`: its go.mod
# replaces every k8s.io staging module with ./staging/src/k8s.io/NAME, which a
# module download does not carry. So the module directory is copied to a
# writable place and each such replace is pointed at the published module of
# the same release, k8s.io/NAME v0.<minor>.<patch>.
#
#   $KUBE_CACHE/etcd/usr/bin/etcd  etcd 3.5.16 from Debian trixie.
# Idempotent: a version whose five binaries are there is not built again.
# Prints each version's build time. Needs Go (/usr/local/go/bin is searched).
set -euo pipefail

export PATH=$PATH:/usr/local/go/bin
cache=${KUBE_CACHE:-/var/cache/userns-hostnet/kubernetes}
components="kubelet kube-apiserver kube-controller-manager kube-scheduler kubectl"
[ $# -gt 0 ] || set -- v1.37.2 v1.35.4:kubelet

command -v go >/dev/null || {
	echo "kubernetes.sh: go is not installed (expected at /usr/local/go/bin/go)" >&2
	exit 1
}

build() {
	local version=${1%%:*} minor patch dir src work name components=$components
	case $1 in *:*) components=$(echo "${1#*:}" | tr , ' ') ;; esac
	dir=$cache/$version
	local missing=
	for name in $components; do
		[ -x "$dir/bin/$name" ] || missing=1
	done
	# A build without the version stamped reports v0.0.0-master: build again.
	if [ -z "$missing" ] && [ "$("$dir/bin/kubelet" --version 2>/dev/null)" != "Kubernetes $version" ]; then
		missing=1
	fi
	if [ -z "$missing" ]; then
		echo "kubernetes.sh: $version cached in $dir/bin"
		return
	fi
	case $version in
	v1.*.*) ;;
	*)
		echo "kubernetes.sh: version $version is not of the form v1.MINOR.PATCH" >&2
		exit 1
		;;
	esac
	minor=${version#v1.}
	patch=${minor#*.}
	minor=${minor%%.*}
	local start=$SECONDS
	src=$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	if [ -z "$src" ] || [ ! -f "$src/go.mod" ]; then
		echo "kubernetes.sh: the Go module proxy gave no directory for k8s.io/kubernetes@$version" >&2
		exit 1
	fi
	mkdir -p "$dir"
	work=$dir/src
	rm -rf "$work" "$dir/bin.tmp"
	cp -r "$src" "$work"
	chmod -R u+w "$work"
	# The module ships a go.work naming ./staging: build the module alone.
	rm -f "$work/go.work" "$work/go.work.sum"
	local edits=()
	for name in $(sed -n 's|^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => \./staging/src/k8s.io/.*|\1|p' "$work/go.mod"); do
		edits+=("-replace=$name=$name@v0.$minor.$patch")
	done
	if [ ${#edits[@]} -eq 0 ]; then
		echo "kubernetes.sh: $work/go.mod has no ./staging replace directives: the module's layout changed" >&2
		exit 1
	fi
	(cd "$work" && GOWORK=off go mod edit "${edits[@]}")
	mkdir -p "$dir/bin.tmp"
	local pkgs=()
	for name in $components; do
		pkgs+=("./cmd/$name")
	done
	# nice: a shared machine stays usable; one go build links them all.
	# The version the binaries report (kubelet --version, the node's
	# kubeletVersion), as the release's own build stamps it.
	local v=k8s.io/component-base/version
	local ldflags="-X $v.gitVersion=$version -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean"
	(cd "$work" && GOWORK=off CGO_ENABLED=0 nice go build -mod=mod -trimpath -ldflags "$ldflags" -o "$dir/bin.tmp/" "${pkgs[@]}")
	rm -rf "$work"
	mkdir -p "$dir/bin"
	mv "$dir/bin.tmp"/* "$dir/bin/"
	rmdir "$dir/bin.tmp"
	echo "kubernetes.sh: built $version in $((SECONDS - start))s into $dir/bin"
}

# etcd: the API server wants etcd 3.5 (bookworm's etcd-server is 3.4.23,
# older than the 3.4.31 whose watch progress notifications the API server's
# consistent reads rely on): trixie's, unpacked by scripts/trixie-deb.sh.
etcd() {
	"$(dirname "$0")/trixie-deb.sh" etcd-server 3.5.16-4 "$cache" "$cache/etcd"
}

mkdir -p "$cache"
etcd
# The same binaries, prebuilt, beside the checkout (../shared/tools): unpacked
# instead of built, which saves about 18 minutes on a new machine. Where the
# folder is absent, build() below builds them from the Go module proxy.
prebuilt=${USERNS_HOSTNET_SHARED:-$(dirname "$0")/../../shared}/tools/kubernetes-1.37.2
if [ -f "$prebuilt/unpack.sh" ]; then
	sh "$prebuilt/unpack.sh" "$cache"
fi
"$cache/etcd/usr/bin/etcd" --version | sed -n 1p
for version; do
	build "$version"
done
for version; do
	"$cache/${version%%:*}/bin/kubelet" --version
done
