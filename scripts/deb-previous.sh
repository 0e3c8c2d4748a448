#!/usr/bin/env bash
# Builds the .deb of the previous version, for the upgrade of
# packaging/check.sh (this checkout's .deb installed over it with a
# container of the handler running):
#   target/previous/deb/userns-hostnet_<version>~previous.<commit>-1_<arch>.deb
# The previous version is REV (the first argument; see
# scripts/image-previous.sh). Its tree is checked out under
# target/previous/src and built by its own Makefile (make man release:
# the binaries, man pages and completions its package holds), then
# packaged by cargo deb as its make package does, with a lower Debian
# version: both may carry the same Cargo version, and dpkg -i of this
# checkout's package must then be an upgrade (~ sorts before anything).
# scripts/previous-tree.sh: the target directory is shared, this
# checkout's files that build replaces are put back. Idempotent: the
# package of the same commit is not built again.
set -euo pipefail

cd "$(dirname "$0")/.."
. scripts/previous-tree.sh
previous_init deb-previous.sh "${1:-}"
out=target/previous/deb
stamp=$out/commit

debs=("$out"/userns-hostnet_*.deb)
if [ "$(cat "$stamp" 2>/dev/null)" = "$commit" ] && [ "${#debs[@]}" = 1 ] && [ -f "${debs[0]}" ]; then
	echo "deb-previous.sh: ${debs[0]} is $commit, built already"
	exit 0
fi

command -v cargo-deb >/dev/null || cargo install --locked cargo-deb
start=$SECONDS
rm -rf "$out"
mkdir -p "$out"
previous_checkout
version=$(awk -F'"' '/^version = / {print $2; exit}' "$src/Cargo.toml")~previous.$(git rev-parse --short=7 "$commit")
make --no-print-directory -C "$src" man release >/dev/null
# Where that version's make release put its binaries: its release triple
# (musl's), or, before it had one, the host's (glibc's).
if [ -x "$src/scripts/release-triple.sh" ]; then
	triple=$(cd "$src" && ./scripts/release-triple.sh)
else
	triple=$(rustc -vV | sed -n 's/^host: //p')
fi
dest=$PWD/$out
(cd "$src" && cargo deb --no-build --target "$triple" --deb-version "$version-1" --output "$dest" >/dev/null)
previous_remove
echo "$commit" >"$stamp"
echo "deb-previous.sh: $(ls "$out"/userns-hostnet_*.deb) from $commit ($(git log -1 --format=%s "$commit" | cut -c1-60)) in $((SECONDS - start))s"
