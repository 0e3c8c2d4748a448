#!/usr/bin/env bash
# Measure what the wrapper costs on a node and print one markdown table,
# ready for docs/performance.md. As root, with runc, jq,
# busybox-static, gcc and GNU time (/usr/bin/time) installed.
#
#   bench/run.sh            full run: release build, many alternating pairs, criterion
#   bench/run.sh --quick    each measurement once or a few times, debug build (CI smoke)
#
# Figures:
#   C floor       a bare C program that execv's its arguments (built here
#                 with gcc): the least any wrapper in front of runc costs
#   pass-through  median over alternating pairs of
#                 time(wrapper state <missing-id>) / time(C floor runc state <missing-id>)
#   exec          the same for `exec <missing-id> true`: a container the
#                 wrapper did not convert (its one look-up of a record)
#   start         the same for `start <missing-id>` (its one look at the
#                 records a create left pending)
#   create        median over alternating pairs of a full create + delete of a
#                 userns + host-network container: the wrapper converting an
#                 unconverted config.json each time, against runc on the
#                 already-converted config.json
#   engine        criterion (crates/engine/benches/engine.rs): strict read of the view the
#                 rules read + decide + convert + the edits written into the
#                 bytes read, 5 KB to 5 MB configs, time and throughput
#   engine memory peak RSS (/usr/bin/time %M) of the engine crate's
#                 example engine-rss (crates/engine/examples/engine-rss.rs)
#                 converting the 25 KB and 5 MB configs, against 2x the
#                 file + 4 MiB
#   memory        peak RSS (/usr/bin/time %M) of a wrapper create on the
#                 largest podman fixture and on the 5 MB config (against
#                 2x the file + 4 MiB) with /bin/true as the real runtime
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

QUICK=0
[ "${1:-}" = --quick ] && QUICK=1
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
# WRAPPER names an already built wrapper (the smoke test passes its own).
# CARGO_FEATURES are the features of the caller's build (the smoke test
# passes its own): the engine's bench and example build with them, so
# that they share the caller's build of the workspace instead of
# compiling its crates again with other features.
read -r -a FEATURES <<<"${CARGO_FEATURES:+--features $CARGO_FEATURES}"
if [ "$QUICK" = 1 ]; then
	PAIRS=${PAIRS:-5}
	CREATE_PAIRS=${CREATE_PAIRS:-1}
	[ -n "${WRAPPER:-}" ] || cargo build --quiet "${FEATURES[@]}" --bin userns-hostnet-runtime
	W=${WRAPPER:-$TARGET/debug/userns-hostnet-runtime}
else
	PAIRS=${PAIRS:-1000}
	CREATE_PAIRS=${CREATE_PAIRS:-100}
	# The build the packages ship (make release): static-pie with musl.
	TRIPLE=$(./scripts/release-triple.sh)
	[ -n "${WRAPPER:-}" ] || RUSTFLAGS="-C target-feature=+crt-static" \
		cargo build --quiet --release --locked --target "$TRIPLE" "${FEATURES[@]}" --bin userns-hostnet-runtime
	W=${WRAPPER:-$TARGET/$TRIPLE/release/userns-hostnet-runtime}
fi
[ "$(id -u)" = 0 ] || { echo "bench: run as root (it creates containers)" >&2; exit 1; }
for tool in runc jq unshare gcc; do
	command -v "$tool" >/dev/null || { echo "bench: $tool is missing" >&2; exit 1; }
done
RUNC=$(command -v runc)
[ -x /usr/bin/time ] || { echo "bench: /usr/bin/time is missing (Debian package time)" >&2; exit 1; }
[ -x /bin/busybox ] || { echo "bench: /bin/busybox is missing (Debian package busybox-static)" >&2; exit 1; }

WORK=$(mktemp -d /tmp/uhn-bench.XXXXXX)
OWN_RECORDS=
trap 'rm -rf "$WORK" ${OWN_RECORDS:+"$OWN_RECORDS"}' EXIT
# The wrapper's creates outside the timed pairs (which have a tmpfs of
# their own on /run) record their containers under a state root of this
# run's own, whose records are removed with it.
OWN_ROOT=$WORK/own-state
mkdir -p "$OWN_ROOT"
OWN_RECORDS=/run/userns-hostnet/converted/$(stat -c '%d %i' "$OWN_ROOT" | awk '{ printf "%x:%x", $1, $2 }')
chmod 755 "$WORK" # the container's root (host uid 100000) walks to the rootfs
printf '[log]\nfile = "%s/decisions.log"\n' "$WORK" >"$WORK/config.toml"
export USERNS_HOSTNET_CONFIG=$WORK/config.toml

# Median of the numbers on stdin.
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# Microseconds taken by a command ($EPOCHREALTIME: no extra process).
elapsed() {
	local t0 t1
	t0=$EPOCHREALTIME
	"$@" >/dev/null 2>&1 || true
	t1=$EPOCHREALTIME
	echo $(((${t1/./} - ${t0/./})))
}

# The floor: what a wrapper that only execs costs.
cat >"$WORK/execv.c" <<'C'
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	if (argc < 2)
		return 127;
	execv(argv[1], argv + 1);
	perror(argv[1]);
	return 127;
}
C
gcc -O2 -o "$WORK/execv" "$WORK/execv.c"
FLOOR=$WORK/execv

# 1. Pass-through: state of a container that does not exist; and exec
# into one, which the wrapper did not convert (an open of the state root
# and one failed open of the state file there). Each against the C floor
# running the same runc command line, in alternating order; runc alone
# for scale.
mkdir -p "$WORK/state"
# pairs NAME ARGS...: $NAME.ratios (wrapper / floor), $NAME.floor, $NAME.runc
pairs() {
	local name=$1 w c r i
	shift
	: >"$WORK/$name.ratios"
	: >"$WORK/$name.floor"
	: >"$WORK/$name.runc"
	for ((i = 0; i < PAIRS; i++)); do
		if ((i % 2)); then
			w=$(USERNS_HOSTNET_RUNTIME=$RUNC elapsed "$W" "$@")
			c=$(elapsed "$FLOOR" "$RUNC" "$@")
		else
			c=$(elapsed "$FLOOR" "$RUNC" "$@")
			w=$(USERNS_HOSTNET_RUNTIME=$RUNC elapsed "$W" "$@")
		fi
		r=$(elapsed "$RUNC" "$@")
		echo "$w $c" | awk '{ print $1 / $2 }' >>"$WORK/$name.ratios"
		echo "$c" >>"$WORK/$name.floor"
		echo "$r" >>"$WORK/$name.runc"
	done
}
pairs pass --root "$WORK/state" state missing-id
PASS_RATIO=$(median <"$WORK/pass.ratios")
PASS_FLOOR=$(median <"$WORK/pass.floor")
PASS_RUNC=$(median <"$WORK/pass.runc")
pairs exec --root "$WORK/state" exec missing-id true
EXEC_RATIO=$(median <"$WORK/exec.ratios")
EXEC_FLOOR=$(median <"$WORK/exec.floor")
EXEC_RUNC=$(median <"$WORK/exec.runc")
# start binds a record the create left pending: for a container the
# wrapper did not convert, one look at an empty (or missing) directory.
pairs start --root "$WORK/state" start missing-id
START_RATIO=$(median <"$WORK/start.ratios")
START_FLOOR=$(median <"$WORK/start.floor")
START_RUNC=$(median <"$WORK/start.runc")

# 2. Create + delete of a userns + host-network container.
ROOTFS=$WORK/rootfs
mkdir -p "$ROOTFS"/{bin,proc,sys,dev,etc,tmp}
cp /bin/busybox "$ROOTFS/bin/busybox"
ln -s busybox "$ROOTFS/bin/true"
chown -R -h 100000:100000 "$ROOTFS"
B=$WORK/bundle
mkdir -p "$B"
"$RUNC" spec --bundle "$B"
jq --arg root "$ROOTFS" '
	.root.path = $root | .process.terminal = false | .process.args = ["/bin/true"]
	| .linux.namespaces = ([.linux.namespaces[] | select(.type != "network")] + [{type: "user"}])
	| .linux.uidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
	| .linux.gidMappings = [{containerID: 0, hostID: 100000, size: 65536}]' \
	"$B/config.json" >"$WORK/unconverted.json"
cp "$WORK/unconverted.json" "$B/config.json"
# Convert once through a stub runtime that answers the rro probe like runc.
printf '#!/bin/sh\n[ "$1" = features ] && exec %s features\nexit 0\n' "$RUNC" >"$WORK/stub"
chmod +x "$WORK/stub"
USERNS_HOSTNET_RUNTIME=$WORK/stub "$W" --root "$OWN_ROOT" create --bundle "$B" convert-only >/dev/null
cmp -s "$B/config.json" "$WORK/unconverted.json" && { echo "bench: the wrapper did not convert" >&2; exit 1; }
cp "$B/config.json" "$WORK/converted.json"
# In a private mount namespace with a pure cgroup v2 view (runc 1.1.5 and
# these hybrid-cgroup hosts), as the end-to-end tests do, and a tmpfs on
# /run as on a node (systemd mounts one; this VM's /run is on its disk):
# the wrapper's records and probe cache live there, and so does the bundle
# in the first series, where containerd (/run/containerd/...task/) and
# CRI-O (/run/containers/storage/) keep theirs. The second series keeps the
# bundle on this VM's disk, where the fsync before the rename is real I/O.
# create_pairs SERIES BUNDLE_DIR: $SERIES.ratios (wrapper / runc), $SERIES.runc
create_pairs() {
	unshare --mount --propagation private bash -s "$W" "$RUNC" "$WORK" "$B" "$CREATE_PAIRS" "$1" "$2" <<'INNER'
set -euo pipefail
W=$1 RUNC=$2 WORK=$3 B0=$4 N=$5 SERIES=$6 B=$7
umount -R /sys/fs/cgroup 2>/dev/null || true
mount -t cgroup2 none /sys/fs/cgroup
mount -t tmpfs -o mode=755 tmpfs /run
mkdir -p "$B"
cp "$B0/config.json" "$B/config.json"
export USERNS_HOSTNET_RUNTIME=$RUNC
cycle() { # program id
	"$1" --root "$WORK/state" create --bundle "$B" "$2" >/dev/null &&
		"$1" --root "$WORK/state" delete "$2" >/dev/null ||
		echo "$1 create/delete $2 failed" >>"$WORK/create.failed"
}
us() { local t0=$EPOCHREALTIME; "$@"; local t1=$EPOCHREALTIME; echo $((${t1/./} - ${t0/./})); }
: >"$WORK/$SERIES.ratios"
: >"$WORK/$SERIES.runc"
# One untimed round each: the wrapper's probe answer is cached in /run.
cp "$WORK/unconverted.json" "$B/config.json.new" && mv "$B/config.json.new" "$B/config.json"
cycle "$W" warm-w
cycle "$RUNC" warm-r
for ((i = 0; i < N; i++)); do
	cp "$WORK/unconverted.json" "$B/config.json.new" && mv "$B/config.json.new" "$B/config.json"
	w=$(us cycle "$W" "w$i")
	cp "$WORK/converted.json" "$B/config.json.new" && mv "$B/config.json.new" "$B/config.json"
	r=$(us cycle "$RUNC" "r$i")
	echo "$w $r" | awk '{ print $1 / $2 }' >>"$WORK/$SERIES.ratios"
	echo "$r" >>"$WORK/$SERIES.runc"
done
INNER
}
create_pairs create /run/uhn-bench/bundle
create_pairs create-disk "$WORK/disk-bundle"
if [ -s "$WORK/create.failed" ]; then
	cat "$WORK/create.failed" >&2
	exit 1
fi
CREATE_RATIO=$(median <"$WORK/create.ratios")
CREATE_RUNC=$(median <"$WORK/create.runc")
CREATE_DISK_RATIO=$(median <"$WORK/create-disk.ratios")
CREATE_DISK_RUNC=$(median <"$WORK/create-disk.runc")

# 3. Engine scaling (criterion), or each case once in quick mode.
if [ "$QUICK" = 1 ]; then
	cargo test --quiet "${FEATURES[@]}" --bench engine >"$WORK/engine.txt" 2>&1
	ENGINE_25K="ran"
	ENGINE_5M="ran"
	ENGINE_ALL="each size ran once (--quick)"
else
	cargo bench --quiet "${FEATURES[@]}" --bench engine -- convert >"$WORK/engine.txt" 2>&1
	# "convert/25KB  time:   [a b c]" then "thrpt:  [a b c]": the middle
	# estimates of each size (the name may stand on a line of its own;
	# other groups are skipped, and so are the "change:" blocks against a
	# saved baseline).
	ENGINE_ALL=$(awk '$1 ~ /^[A-Za-z0-9_]+\/[^:]+$/ { name = $1 }
		/time:/ && name ~ /^convert\// { sub(/.*\[/, ""); t = $3 " " $4; next }
		/thrpt:/ && name ~ /^convert\// { sub(/.*\[/, ""); print name ": " t " (" $3 " " $4 ")"; name = "" }' "$WORK/engine.txt" |
		sed 's|convert/||' | paste -sd ';' | sed 's/;/; /g')
	ENGINE_25K=$(echo "$ENGINE_ALL" | tr ';' '\n' | awk -F': ' '$1 ~ /25KB/ { print $2 }')
	ENGINE_5M=$(echo "$ENGINE_ALL" | tr ';' '\n' | awk -F': ' '$1 ~ /5MB/ { print $2 }')
fi

# 3b. Peak RSS of the engine alone (crates/engine/examples/engine-rss.rs: read the file,
# convert it as the wrapper does, write the result to /dev/null) on the
# 25 KB fixture and the 5 MB config, against 2x the file + 4 MiB.
if [ "$QUICK" = 1 ]; then
	cargo build --quiet "${FEATURES[@]}" --example engine-rss
	RSS_BIN=$TARGET/debug/examples/engine-rss
else
	# Linked as the wrapper ships (static-pie): the process's own pages
	# are the wrapper's, not a dynamic loader's and libc's.
	RUSTFLAGS="-C target-feature=+crt-static" \
		cargo build --quiet --release --locked --target "$TRIPLE" "${FEATURES[@]}" --example engine-rss
	RSS_BIN=$TARGET/$TRIPLE/release/examples/engine-rss
fi
engine_rss() { # size: "rss KiB, file KiB, bound KiB"
	"$RSS_BIN" gen "$1" >"$WORK/engine-$1.json"
	/usr/bin/time -f %M -o "$WORK/engine-rss.txt" "$RSS_BIN" convert "$WORK/engine-$1.json"
	local file=$(($(stat -c %s "$WORK/engine-$1.json") / 1024))
	echo "$(tail -n 1 "$WORK/engine-rss.txt") $file $((2 * file + 4096))"
}
read -r RSS25_KIB FILE25_KIB BOUND25_KIB <<<"$(engine_rss 25000)"
read -r RSS5M_KIB FILE5M_KIB BOUND5M_KIB <<<"$(engine_rss 5000000)"

# 4. Peak RSS of the wrapper converting the largest podman fixture, then
# the 5 MB config of 3b, exec'ing /bin/true.
# /bin/true answers no rro probe: accept a plain ro so the conversion still runs.
printf '[log]\nfile = "%s/decisions.log"\n[sysfs]\nfallback = "ro"\n' "$WORK" >"$WORK/mem.toml"
wrapper_rss() { # spec name: "rss KiB"
	local mb=$WORK/mem-$2
	mkdir -p "$mb/rootfs"
	cp "$1" "$mb/config.json"
	USERNS_HOSTNET_CONFIG=$WORK/mem.toml USERNS_HOSTNET_RUNTIME=/bin/true \
		/usr/bin/time -f %M -o "$WORK/mem.txt" "$W" --root "$OWN_ROOT" create --bundle "$mb" "$2"
	cmp -s "$mb/config.json" "$1" && { echo "bench: the memory run $2 did not convert" >&2; exit 1; }
	tail -n 1 "$WORK/mem.txt"
}
RSS_KIB=$(wrapper_rss crates/engine/fixtures/podman-privileged-userns-hostnet.json mem-id)
RSS5MW_KIB=$(wrapper_rss "$WORK/engine-5000000.json" mem-5m)

cat <<TABLE
| measurement | result | target |
|---|---|---|
| pass-through: \`state <missing-id>\`, wrapper / C execv floor, median of $PAIRS alternating pairs | $(printf '%.3f' "$PASS_RATIO") (floor: $PASS_FLOOR µs; runc alone: $PASS_RUNC µs) | <= 1.02 |
| exec, container not converted: \`exec <missing-id> true\`, wrapper / C execv floor, median of $PAIRS alternating pairs | $(printf '%.3f' "$EXEC_RATIO") (floor: $EXEC_FLOOR µs; runc alone: $EXEC_RUNC µs) | <= 1.02 |
| start, container not converted: \`start <missing-id>\`, wrapper / C execv floor, median of $PAIRS alternating pairs | $(printf '%.3f' "$START_RATIO") (floor: $START_FLOOR µs; runc alone: $START_RUNC µs) | <= 1.02 |
| create + delete, userns + host network, wrapper converting / runc on the converted config, bundle on a tmpfs /run as on a node, median of $CREATE_PAIRS pairs | $(printf '%.3f' "$CREATE_RATIO") (runc alone: $CREATE_RUNC µs) | <= 1.02 |
| the same, bundle on this machine's disk (the fsync before the rename is real I/O) | $(printf '%.3f' "$CREATE_DISK_RATIO") (runc alone: $CREATE_DISK_RUNC µs) | for information |
| engine, typical 25 KB config (podman fixture), strict read + decide + convert + write + check | $ENGINE_25K | <= 100 µs |
| engine, 5 MB config | $ENGINE_5M | none: real specs are tens of kilobytes (5 MB is measured for linearity and peak RSS, below) |
| engine, all sizes (throughput) | $ENGINE_ALL | linear |
| peak RSS of the engine alone (examples/engine-rss), 25 KB fixture | $RSS25_KIB KiB (file: $FILE25_KIB KiB) | <= 2x file + 4 MiB = $BOUND25_KIB KiB |
| peak RSS of the engine alone (examples/engine-rss), 5 MB config | $RSS5M_KIB KiB (file: $FILE5M_KIB KiB) | <= 2x file + 4 MiB = $BOUND5M_KIB KiB |
| peak RSS of the wrapper, create of the largest podman fixture, /bin/true as runtime | $((RSS_KIB / 1024)).$(((RSS_KIB % 1024) * 10 / 1024)) MiB ($RSS_KIB KiB) | < 8 MiB |
| peak RSS of the wrapper, create of the 5 MB config (a converting spec), /bin/true as runtime | $RSS5MW_KIB KiB (file: $FILE5M_KIB KiB) | <= 2x file + 4 MiB = $BOUND5M_KIB KiB |
TABLE
