#!/usr/bin/env bash
# The target triple the release binaries are built for: this machine's
# architecture, or the one named (amd64, arm64, or a platform such as
# linux/arm64), linked statically with musl (the Makefile says why).
#   scripts/release-triple.sh [ARCH]
set -euo pipefail
arch=${1:-$(rustc -vV | sed -n 's/^host: //p')}
case ${arch#linux/} in
amd64 | x86_64*) echo x86_64-unknown-linux-musl ;;
arm64 | aarch64*) echo aarch64-unknown-linux-musl ;;
*)
	echo "release-triple.sh: no release target known for $arch" >&2
	exit 1
	;;
esac
