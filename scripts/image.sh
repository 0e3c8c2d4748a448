#!/usr/bin/env bash
# Builds the installer image (Containerfile) with podman:
#   1. the release binaries, linked statically with glibc, so that they run
#      in an image without a libc (FROM scratch) and on any node. The
#      explicit --target keeps proc-macros buildable (they are host-linked
#      without crt-static);
#   2. a check that both are static (file, ldd): a dynamic one would fail
#      only on the node;
#   3. a staging directory with the binaries alone as the build context,
#      and `podman build` into localhost/userns-hostnet-installer:VERSION
#      (IMAGE overrides the name).
# Prints the image's size. Run as root from anywhere; offline.
set -euo pipefail

cd "$(dirname "$0")/.."
version=$(awk -F'"' '/^version = / {print $2; exit}' Cargo.toml)
image=${IMAGE:-localhost/userns-hostnet-installer:$version}
target=$(rustc -vV | sed -n 's/^host: //p')
out=target/$target/release

# The same build as `make release` (and so the packages): one build serves both.
RUSTFLAGS='-C target-feature=+crt-static' cargo build --release --locked --target "$target" --bins

for bin in userns-hostnet userns-hostnet-runtime; do
	desc=$(file -b "$out/$bin")
	case $desc in
	*"statically linked"* | *"static-pie linked"*) ;;
	*)
		echo "$out/$bin is not statically linked: $desc" >&2
		exit 1
		;;
	esac
	# A static(-pie) binary: "not a dynamic executable" or "statically
	# linked"; a dynamic one lists its libraries with "=>".
	libs=$(ldd "$out/$bin" 2>&1 || true)
	if grep -q '=>' <<<"$libs"; then
		echo "$out/$bin: ldd finds shared libraries:" >&2
		echo "$libs" >&2
		exit 1
	fi
done

stage=target/image
rm -rf "$stage"
mkdir -p "$stage"
cp "$out/userns-hostnet" "$out/userns-hostnet-runtime" "$stage/"
podman build --quiet --file Containerfile --tag "$image" "$stage" >/dev/null
size=$(podman image inspect --format '{{.Size}}' "$image")
echo "$image: $size bytes"
