#!/bin/sh
# Runs "$@" in a private mount namespace whose /sys looks like a real node's:
# bpffs at /sys/fs/bpf, securityfs at /sys/kernel/security, and a pure
# cgroup v2 tree at /sys/fs/cgroup (runc and crun both accept that view; crun
# 1.8.1 also needs its global option --cgroup-manager=disabled there).
# Nothing leaks to the host: the mounts vanish with the namespace.
set -eu
if [ "$#" -eq 0 ]; then
	echo "usage: $0 RUNTIME [ARG...]" >&2
	exit 2
fi
exec unshare --mount --propagation private sh -c '
set -e
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
mountpoint -q /sys/kernel/security || mount -t securityfs securityfs /sys/kernel/security
umount -R /sys/fs/cgroup
mount -t cgroup2 none /sys/fs/cgroup
exec "$@"
' sys-view "$@"
