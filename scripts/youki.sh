#!/usr/bin/env bash
# Builds youki, the third OCI runtime the tests run, into target/youki/bin
# (crates.io has it; Debian does not). Built once: a second run finds the
# binary and builds nothing. About 4 minutes on 2 cores; needs the Debian
# packages libseccomp-dev, libsystemd-dev and pkg-config.
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.7.0
dest=$PWD/target/youki
if [ -x "$dest/bin/youki" ] && "$dest/bin/youki" --version 2>/dev/null | grep -q "^youki version:\? $version\$"; then
	"$dest/bin/youki" --version | head -1
	exit 0
fi
for p in libseccomp-dev libsystemd-dev pkg-config; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		{ echo "youki.sh: the Debian package $p is missing (apt-get install $p)" >&2; exit 1; }
done
cargo install --quiet --locked --root "$dest" --version "$version" youki --features v1,v2,systemd,seccomp
"$dest/bin/youki" --version | head -1
