#!/usr/bin/env bash
# Fetches what the CRI end-to-end tier (tests/e2e_cri.rs) needs, into target/:
#   target/containerd-1.7/usr/bin/containerd  containerd 1.7.24 from Debian trixie,
#       the first Debian containerd with CRI user namespaces (bookworm's 1.6.20
#       has none). Downloaded with a private APT_CONFIG whose only source is
#       trixie and unpacked with dpkg -x: the system's sources and its own
#       containerd stay as they are.
#   target/cri-o/crictl  cri-tools 1.36.0, the CRI client the tier drives, from
#       ../shared/tools/cri-o-1.36.3 beside the checkout.
#   target/containerd-2.3/containerd  containerd 2.3.4, from
#       ../shared/tools/containerd-2.3.4-runc-1.4.3, for tests/admin_install.rs.
# Idempotent: a second run checks what is there and downloads nothing.
# Run as root from anywhere; needs apt-get, dpkg and xz-utils.
set -euo pipefail

cd "$(dirname "$0")/.."
repo=$PWD
version=1.7.24~ds1-6+deb13u1
dest=target/containerd-1.7

mkdir -p target
if [ -x "$dest/usr/bin/containerd" ] && [ "$(cat "$dest/.version" 2>/dev/null)" = "$version" ]; then
	:
else
	A=$repo/target/apt
	mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$A/etc"
	uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
	uri=${uri:-http://deb.debian.org/debian}
	printf 'Types: deb\nURIs: %s\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
		"$uri" >"$A/etc/trixie.sources"
	printf 'Dir::Etc::sourcelist "/dev/null";\nDir::Etc::sourceparts "%s/etc";\nDir::State::Lists "%s/lists";\nDir::Cache "%s/cache";\n' \
		"$A" "$A" "$A" >"$A/apt.conf"
	deb=$(ls target/containerd_1.7.24*.deb 2>/dev/null | head -1 || true)
	if [ -z "$deb" ]; then
		APT_CONFIG=$A/apt.conf apt-get update -q
		if ! (cd target && APT_CONFIG=$A/apt.conf apt-get download "containerd=$version"); then
			echo "cri-tools.sh: containerd=$version is not in trixie any more (a point release replaced it): update the pinned version here" >&2
			exit 1
		fi
		deb=$(ls target/containerd_1.7.24*.deb | head -1)
	fi
	rm -rf "$dest.tmp"
	dpkg -x "$deb" "$dest.tmp"
	echo "$version" >"$dest.tmp/.version"
	rm -rf "$dest"
	mv "$dest.tmp" "$dest"
fi
"$dest/usr/bin/containerd" --version

shared=${USERNS_HOSTNET_SHARED:-$repo/../shared}
tools=$shared/tools/cri-o-1.36.3
if [ ! -x "$tools/unpack.sh" ]; then
	echo "cri-tools.sh: $tools/unpack.sh is missing: the prebuilt crictl is expected in ../shared beside the checkout" >&2
	exit 1
fi
sh "$tools/unpack.sh" target/cri-o

# containerd 2.3.4 for tests/admin_install.rs: a drop-in is loaded as it is
# meant to be only from 2.0 on (1.x replaces the whole CRI plugin table).
sh "$shared/tools/containerd-2.3.4-runc-1.4.3/unpack.sh" target/containerd-2.3
