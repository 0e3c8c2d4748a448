#!/usr/bin/env bash
# qemu-user 10.0 for aarch64 (Debian trixie's, a static binary, unpacked,
# never installed), for make arm64-check: it runs the aarch64 binaries and
# test binaries on an x86_64 machine. Debian 12's qemu-user-static (7.2)
# lacks system calls the wrapper makes: mount_setattr (it then refuses
# every conversion, as on a kernel without it), openat2 (every path
# resolved inside a root fails), statx's mount id. Cached in
# /var/cache/userns-hostnet/qemu (outside the checkout: a machine fetches
# it once); prints the emulator's path.
set -euo pipefail

version=1:10.0.13+ds-0+deb13u1
cache=/var/cache/userns-hostnet/qemu
dest=$cache/qemu-user-${version#1:}
mkdir -p "$cache"
"$(dirname "$0")/trixie-deb.sh" qemu-user "$version" "$cache" "$dest" ./usr/bin/qemu-aarch64 >&2
"$dest/usr/bin/qemu-aarch64" --version | grep -q '^qemu-aarch64 version 10\.' || {
	echo "qemu.sh: $dest/usr/bin/qemu-aarch64 does not run: $("$dest/usr/bin/qemu-aarch64" --version 2>&1)" >&2
	exit 1
}
echo "$dest/usr/bin/qemu-aarch64"
