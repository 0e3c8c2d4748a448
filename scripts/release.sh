#!/usr/bin/env bash
# The release binaries (the wrapper and the admin tool) for one target
# triple, by default this machine's architecture's release triple
# (scripts/release-triple.sh): static-pie (static on aarch64), linked with
# musl, as the packages and the installer image ship them (the Makefile
# says why).
#   scripts/release.sh [TRIPLE]   -> target/TRIPLE/release/
# The explicit --target keeps RUSTFLAGS off build scripts and proc-macros,
# which cannot be static. Rust's musl targets bring musl's start files and
# libc.a; the C compiler (ring's C and assembly, the admin tool's TLS) and,
# for another architecture, the linker are Debian's gcc for that
# architecture: ring's code uses no libc headers a glibc gcc would get
# wrong, and Debian ships no musl cross compiler.
# `rustup target add TRIPLE` first.
set -euo pipefail

cd "$(dirname "$0")/.."
host=$(rustc -vV | sed -n 's/^host: //p')
target=${1:-$(./scripts/release-triple.sh)}

case $target in
"${host%%-*}"-*) cc=cc package=gcc ;;
aarch64-*) cc=aarch64-linux-gnu-gcc package=gcc-aarch64-linux-gnu ;;
x86_64-*) cc=x86_64-linux-gnu-gcc package=gcc-x86-64-linux-gnu ;;
*)
	echo "release.sh: no C compiler known for $target" >&2
	exit 1
	;;
esac
command -v "$cc" >/dev/null || {
	echo "release.sh: $cc is missing: install the Debian package $package (make deps)" >&2
	exit 1
}
rustup target list --installed 2>/dev/null | grep -qx "$target" || {
	echo "release.sh: the Rust standard library for $target is missing: rustup target add $target" >&2
	exit 1
}
upper=$(tr 'a-z-' 'A-Z_' <<<"$target")
compiler=CC_${target//-/_}
export "$compiler=${!compiler:-$cc}"
if [ "${target%%-*}" != "${host%%-*}" ]; then
	linker=CARGO_TARGET_${upper}_LINKER
	export "$linker=${!linker:-$cc}"
fi

RUSTFLAGS='-C target-feature=+crt-static' cargo build --release --locked --target "$target" --bins
