#!/usr/bin/env bash
# Demonstrates userns-hostnet-runtime on this machine:
#   1. a user-namespaced container on the host network fails under plain runc
#      (a fresh sysfs needs privilege over the host's network namespace);
#   2. the same bundle runs through the wrapper;
#   3. what changed in config.json, and what the container saw.
#
# usage: scripts/demo.sh [WRAPPER]     (default: target/debug/userns-hostnet-runtime)
# env:   DEMO_RUNTIME=runc|crun        real runtime behind the wrapper (default runc)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
wrapper="$(realpath "${1:-$here/../target/debug/userns-hostnet-runtime}")"
runtime="${DEMO_RUNTIME:-runc}"

bold() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
note() { printf '   %s\n' "$*"; }
die() { echo "demo: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (real containers, user namespaces, mounts)"
[ -x "$wrapper" ] || die "wrapper $wrapper not found: run 'cargo build' first"
for tool in runc "$runtime" jq unshare busybox diff awk; do
	command -v "$tool" >/dev/null || die "$tool is missing (make deps installs it)"
done

runtime_globals=()
if [ "$runtime" = crun ]; then
	runtime_globals=(--cgroup-manager=disabled)
fi

work="$(mktemp -d /tmp/userns-hostnet-demo.XXXXXX)"
chmod 755 "$work"
state="$work/state"
bundle="$work/bundle"
id_plain="demo-plain-$$"
id_wrapped="demo-wrapped-$$"
mkdir -p "$state" "$bundle"

cleanup() {
	for id in "$id_plain" "$id_wrapped"; do
		"$here/sys-view.sh" "$runtime" "${runtime_globals[@]}" --root "$state" delete --force "$id" >/dev/null 2>&1 || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

bold "Bundle: busybox rootfs, user namespace (0 -> host 100000), host network"
rootfs="$work/rootfs"
mkdir -p "$rootfs"/{bin,proc,sys,dev,etc,tmp,run}
cp "$(command -v busybox)" "$rootfs/bin/busybox"
for applet in sh cat awk grep ls echo sleep true id mount; do
	ln -s busybox "$rootfs/bin/$applet"
done
chown -R -h 100000:100000 "$rootfs"

probe='echo "### mountinfo"; cat /proc/self/mountinfo; echo "### status"; cat /proc/self/status; echo "### uid_map"; cat /proc/self/uid_map'
runc spec --bundle "$bundle"
jq --arg root "$rootfs" --arg probe "$probe" '
	.root.path = $root
	| .process.terminal = false
	| .process.args = ["/bin/sh", "-c", $probe]
	| .process.capabilities |= with_entries(.value = [
		"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_SETUID", "CAP_SETGID",
		"CAP_KILL", "CAP_AUDIT_WRITE", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST",
		"CAP_NET_ADMIN", "CAP_NET_RAW"])
	| .linux.namespaces = ([.linux.namespaces[] | select(.type != "network")] + [{type: "user"}])
	| .linux.uidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
	| .linux.gidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
' "$bundle/config.json" >"$work/config.tmp"
mv "$work/config.tmp" "$bundle/config.json"
cp "$bundle/config.json" "$work/before.json"
note "bundle:     $bundle"
note "namespaces: $(jq -c '[.linux.namespaces[].type]' "$bundle/config.json")"
note "/sys mount: $(jq -c '.mounts[] | select(.destination == "/sys")' "$bundle/config.json")"
note "runtime:    $runtime $(  "$runtime" --version | awk 'NR == 1 {print $NF}')"
note "every runtime call runs in a private mount namespace with bpffs and"
note "securityfs under /sys and a cgroup v2 view (scripts/sys-view.sh)"

bold "1. Plain $runtime, no wrapper"
set +e
"$here/sys-view.sh" "$runtime" "${runtime_globals[@]}" --root "$state" run --bundle "$bundle" "$id_plain" \
	>"$work/plain.out" 2>"$work/plain.err"
rc=$?
set -e
if [ "$rc" -ne 0 ]; then
	note "exit status $rc:"
	grep -o 'error mounting.*operation not permitted' "$work/plain.err" | sed 's/\\"/"/g; s/^/     /' || sed 's/^/     /' "$work/plain.err"
	grep -q 'operation not permitted' "$work/plain.err" && note "=> the sysfs mount is refused (EPERM)"
else
	note "exit status 0: $runtime fell back to its own bind of /sys; see what it gave:"
	awk '/^### mountinfo/{m=1;next} /^###/{m=0} m && $5 ~ /^\/sys(\/|$)/ {printf "     %-28s %s\n", $5, $6}' "$work/plain.out"
	note "CapBnd $(awk '/^CapBnd/{print $2}' "$work/plain.out") (network capabilities kept)"
fi
"$here/sys-view.sh" "$runtime" "${runtime_globals[@]}" --root "$state" delete --force "$id_plain" >/dev/null 2>&1 || true

bold "2. Same bundle through userns-hostnet-runtime (USERNS_HOSTNET_RUNTIME=$runtime)"
: >"$work/config.toml"
USERNS_HOSTNET_RUNTIME="$runtime" USERNS_HOSTNET_CONFIG="$work/config.toml" \
	"$here/sys-view.sh" "$wrapper" "${runtime_globals[@]}" --root "$state" run --bundle "$bundle" "$id_wrapped" \
	>"$work/wrapped.out" 2>"$work/wrapped.err" || {
	note "FAILED:"
	sed 's/^/     /' "$work/wrapped.err"
	exit 1
}
note "exit status 0: the container ran"

bold "3. config.json, before -> after"
diff -u --label before --label after <(jq . "$work/before.json") <(jq . "$bundle/config.json") || true

bold "4. What the container saw"
note "mounts at or under /sys (mount point, per-mount options, fs type):"
awk '/^### mountinfo/{m=1;next} /^###/{m=0}
	m && $5 ~ /^\/sys(\/|$)/ {
		for (i = 7; $i != "-"; i++) {}
		printf "     %-28s %-40s %s\n", $5, $6, $(i+1)
	}' "$work/wrapped.out"
rw_count=$(awk '/^### mountinfo/{m=1;next} /^###/{m=0} m && $5 ~ /^\/sys(\/|$)/ && $6 !~ /(^|,)ro(,|$)/' "$work/wrapped.out" | wc -l)
if [ "$rw_count" -eq 0 ]; then
	note "=> every mount at or under /sys is read-only"
else
	note "=> $rw_count mount(s) under /sys are WRITABLE"
fi

if ! awk '/^### mountinfo/{m=1;next} /^###/{m=0} m && $5 == "/sys/fs/bpf"' "$work/wrapped.out" | grep . >/dev/null; then
	note "   (the host's bpffs/securityfs submounts are not visible: $runtime cloned"
	note "    the /sys bind without its submounts, which hides them, read-only or not)"
fi

capbnd=$(awk '/^CapBnd/{print $2}' "$work/wrapped.out")
note ""
note "CapBnd: $capbnd"
for bit_name in 0:CAP_CHOWN 10:CAP_NET_BIND_SERVICE 11:CAP_NET_BROADCAST 12:CAP_NET_ADMIN 13:CAP_NET_RAW; do
	bit=${bit_name%%:*}
	name=${bit_name#*:}
	if (( (16#$capbnd >> bit) & 1 )); then
		printf '     %-22s present\n' "$name"
	else
		printf '     %-22s dropped\n' "$name"
	fi
done

note ""
note "uid_map (container-id host-id size):"
awk '/^### uid_map/{m=1;next} /^###/{m=0} m {printf "     %s %s %s\n", $1, $2, $3}' "$work/wrapped.out"

bold "Done (temporary files removed)"
