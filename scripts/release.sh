#!/usr/bin/env bash
# The release binaries (the wrapper and the admin tool) for one target
# triple, by default this machine's: static-pie, linked with glibc, as the
# packages and the installer image ship them (the Makefile says why).
#   scripts/release.sh [TRIPLE]   -> target/TRIPLE/release/
# The explicit --target keeps RUSTFLAGS off build scripts and proc-macros,
# which cannot be static. For aarch64-unknown-linux-gnu on another machine
# the linker is Debian's cross gcc (gcc-aarch64-linux-gnu, with
# libc6-dev-arm64-cross: glibc's static archives for aarch64), which also
# compiles ring's C and assembly (cc picks aarch64-linux-gnu-gcc for that
# target); `rustup target add aarch64-unknown-linux-gnu` first.
set -euo pipefail

cd "$(dirname "$0")/.."
host=$(rustc -vV | sed -n 's/^host: //p')
target=${1:-$host}

if [ "$target" != "$host" ]; then
	case $target in
	aarch64-unknown-linux-gnu) cc=aarch64-linux-gnu-gcc package=gcc-aarch64-linux-gnu ;;
	x86_64-unknown-linux-gnu) cc=x86_64-linux-gnu-gcc package=gcc-x86-64-linux-gnu ;;
	*)
		echo "release.sh: no cross linker known for $target" >&2
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
	linker=CARGO_TARGET_$(tr 'a-z-' 'A-Z_' <<<"$target")_LINKER
	export "$linker=${!linker:-$cc}"
fi

RUSTFLAGS='-C target-feature=+crt-static' cargo build --release --locked --target "$target" --bins
