#!/usr/bin/env bash
# Builds youki, the third OCI runtime the tests run, into target/youki/bin
# (crates.io has it; Debian does not). Built once per machine: the build is
# kept in ~/.cache/userns-hostnet (or $XDG_CACHE_HOME) and copied from there
# into a fresh checkout's target/. About 4 minutes on 2 cores the first
# time; needs the Debian packages libseccomp-dev, libsystemd-dev and
# pkg-config.
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.7.0
dest=$PWD/target/youki
cache=${XDG_CACHE_HOME:-$HOME/.cache}/userns-hostnet/youki-$version
# youki panics when its stdout closes early (a `| head`), so its version is
# read whole first.
version_of() { "$1/bin/youki" --version 2>/dev/null | sed -n 1p || true; }
is_built() { [ -x "$1/bin/youki" ] && [[ "$(version_of "$1")" =~ ^youki\ version:?\ $version$ ]]; }
if is_built "$dest"; then
	version_of "$dest"
	exit 0
fi
if ! is_built "$cache"; then
	for p in libseccomp-dev libsystemd-dev pkg-config; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'install ok installed' >/dev/null ||
			{ echo "youki.sh: the Debian package $p is missing (apt-get install $p)" >&2; exit 1; }
	done
	# opt-level 1: the tests need youki's behaviour, not its speed, and
	# it builds in about half the time of the default 3.
	CARGO_PROFILE_RELEASE_OPT_LEVEL=1 cargo install --quiet --locked --root "$cache" --version "$version" youki --features v1,v2,systemd,seccomp
fi
mkdir -p "$dest/bin"
cp "$cache/bin/youki" "$dest/bin/youki.tmp"
mv "$dest/bin/youki.tmp" "$dest/bin/youki"
is_built "$dest" || { echo "youki.sh: $dest/bin/youki does not say youki version $version" >&2; exit 1; }
version_of "$dest"
