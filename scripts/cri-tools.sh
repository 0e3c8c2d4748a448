#!/usr/bin/env bash
# Fetches what the CRI end-to-end tiers (tests/e2e_cri.rs, tests/e2e_crio.rs),
# the Kubernetes tier and the direct-runtime rows of runc 1.5.3 and crun
# 1.27.1 need, into target/:
#   target/containerd-1.7/usr/bin/containerd  containerd 1.7.24 from Debian trixie,
#       the first Debian containerd with CRI user namespaces (bookworm's 1.6.20
#       has none). Downloaded with a private APT_CONFIG whose only source is
#       trixie and unpacked with dpkg -x: the system's sources and its own
#       containerd stay as they are.
#   target/containerd-2.3/{containerd,containerd-shim-runc-v2,ctr,runc}
#       containerd 2.3.4 and runc 1.4.3, the stack new nodes run, from
#       ../shared/tools/containerd-2.3.4-runc-1.4.3 beside the checkout.
#   target/containerd-2.4/{containerd,containerd-shim-runc-v2,ctr,runc}
#       containerd 2.4.2 and runc 1.5.3, the newest releases (what nodes
#       installed in 2027 run), from ../shared/tools/containerd-2.4.2-runc-1.5.3.
#   target/crun-1.27.1/crun  crun 1.27.1 (static), the runtime of Fedora, RHEL
#       and OpenShift nodes (Debian 12 has 1.8.1), from ../shared/tools/crun-1.27.1.
#   target/cri-o/crictl  cri-tools 1.36.0, the CRI client both tiers drive, and
#       target/cri-o/{crio,pinns,copyimg}  CRI-O 1.36.3, its namespace pinner and
#       its image-copy helper (Debian has no CRI-O), all from
#       ../shared/tools/cri-o-1.36.3 beside the checkout.
#   (target/containerd-2.3/containerd also serves tests/admin_install_versions.rs: a
#   drop-in is loaded as it is meant to be only from containerd 2.0 on.)
# Idempotent: a second run checks what is there and downloads nothing.
# Run as root from anywhere; needs apt-get, dpkg and xz-utils.
set -euo pipefail

cd "$(dirname "$0")/.."
repo=$PWD
version=1.7.24~ds1-6+deb13u1
dest=target/containerd-1.7

mkdir -p target
"$repo/scripts/trixie-deb.sh" containerd "$version" "$repo/target" "$dest"
"$dest/usr/bin/containerd" --version

shared=${USERNS_HOSTNET_SHARED:-$repo/../shared}
for tools in "$shared/tools/containerd-2.3.4-runc-1.4.3:target/containerd-2.3" \
	"$shared/tools/containerd-2.4.2-runc-1.5.3:target/containerd-2.4" \
	"$shared/tools/crun-1.27.1:target/crun-1.27.1" \
	"$shared/tools/cri-o-1.36.3:target/cri-o"; do
	from=${tools%%:*}
	if [ ! -x "$from/unpack.sh" ]; then
		echo "cri-tools.sh: $from/unpack.sh is missing: the prebuilt tools are expected in ../shared beside the checkout" >&2
		exit 1
	fi
	sh "$from/unpack.sh" "${tools#*:}"
done
