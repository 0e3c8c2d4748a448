#!/usr/bin/env bash
# What the wrapper costs when many containers start at once, as on a node
# starting a Deployment's pods after a drain. As root, with runc, jq,
# busybox-static, gcc and unshare. Prints one markdown table, ready for
# docs/performance.md. A benchmark: it asserts no time.
#
#   bench/load.sh                 release build (as make release), N = 1, 10, 50, 10 rounds each
#   bench/load.sh --quick         debug build, N = 1 and 2, 1 round (CI smoke: tests/bench_smoke.rs)
#   LOAD_N="50" ROUNDS=5 bench/load.sh
#
# Figures:
#   latency   N userns + host-network containers at once, each its create,
#             start and delete (`delete --force`: the container may still
#             be running /bin/true), from the create's start to the
#             delete's end; p50 and p99 over every container of every round,
#             through the wrapper converting an unconverted config.json and
#             through runc alone on the already converted one, rounds
#             alternating; the ratio is wrapper / runc. Beside them the
#             same through a C program that only execv's runc (the
#             converted config), linked statically with musl as the
#             wrapper is: what one more execve in front of runc costs at
#             that count, the floor of any wrapper that execs
#   CPU       the wrapper's own CPU per converting create: the CPU of the
#             wrapper exec'ing a stub runtime (a static C program that
#             answers `features` as runc does and exits 0 to anything
#             else), less the stub's own; beside it the same for a bare C
#             program that only execv's its arguments, built twice: as gcc
#             builds a C program by default (dynamic, glibc) and static
#             with musl (the least any wrapper costs: no loader, no
#             glibc start-up). Children's CPU from getrusage, no shell in
#             between, 300 creates each
# After each round nothing may be left: no container in the state root,
# no record of the wrapper's, no mount under the bundles.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

QUICK=0
[ "${1:-}" = --quick ] && QUICK=1
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
read -r -a FEATURES <<<"${CARGO_FEATURES:+--features $CARGO_FEATURES}"
if [ "$QUICK" = 1 ]; then
	LOAD_N=${LOAD_N:-"1 2"}
	ROUNDS=${ROUNDS:-1}
	CPU_RUNS=${CPU_RUNS:-5}
	[ -n "${WRAPPER:-}" ] || cargo build --quiet "${FEATURES[@]}" --bin userns-hostnet-runtime
	W=${WRAPPER:-$TARGET/debug/userns-hostnet-runtime}
else
	LOAD_N=${LOAD_N:-"1 10 50"}
	ROUNDS=${ROUNDS:-10}
	CPU_RUNS=${CPU_RUNS:-300}
	TRIPLE=$(./scripts/release-triple.sh) # as make release: static-pie with musl
	[ -n "${WRAPPER:-}" ] || RUSTFLAGS="-C target-feature=+crt-static" \
		cargo build --quiet --release --locked --target "$TRIPLE" "${FEATURES[@]}" --bin userns-hostnet-runtime
	W=${WRAPPER:-$TARGET/$TRIPLE/release/userns-hostnet-runtime}
fi
[ "$(id -u)" = 0 ] || { echo "load: run as root (it creates containers)" >&2; exit 1; }
for tool in runc jq unshare gcc musl-gcc; do
	command -v "$tool" >/dev/null || { echo "load: $tool is missing" >&2; exit 1; }
done
[ -x /bin/busybox ] || { echo "load: /bin/busybox is missing (Debian package busybox-static)" >&2; exit 1; }
RUNC=$(command -v runc)

WORK=$(mktemp -d /tmp/uhn-load.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
chmod 755 "$WORK" # the container's root (host uid 100000) walks to the rootfs

# The C side: the execv floor, the stub runtime, and the driver that runs
# a command line N times and reports its children's CPU.
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
cat >"$WORK/stub.c" <<C
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "features") == 0) {
			execv("$RUNC", argv);
			return 127;
		}
	return 0;
}
C
# cpu RUNS SRC DST CMD... : RUNS times put SRC at DST (a rename, as a
# runtime's bundle is written), run CMD with the run's number appended to
# its last argument; print the children's user + system CPU per run, µs.
cat >"$WORK/cpu.c" <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
static char buf[1 << 24];
int main(int argc, char **argv)
{
	int runs = atoi(argv[1]), n = argc - 4;
	char **cmd = argv + 4, last[512], tmp[4096];
	const char *base = cmd[n - 1];
	int fd = open(argv[2], O_RDONLY);
	ssize_t len = read(fd, buf, sizeof buf);
	close(fd);
	snprintf(tmp, sizeof tmp, "%s.load-tmp", argv[3]);
	for (int i = 0; i < runs; i++) {
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || write(fd, buf, len) != len || close(fd) || rename(tmp, argv[3]))
			return perror(argv[3]), 1;
		snprintf(last, sizeof last, "%s%d", base, i);
		cmd[n - 1] = last;
		pid_t p = fork();
		if (p == 0) {
			execv(cmd[0], cmd);
			_exit(127);
		}
		int st;
		if (waitpid(p, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			return fprintf(stderr, "run %d of %s failed\n", i, cmd[0]), 1;
	}
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	printf("%.0f\n", (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 / runs +
			   (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / (double)runs);
	return 0;
}
C
cat >"$WORK/execv-runc.c" <<C
#include <unistd.h>
int main(int argc, char **argv)
{
	(void)argc;
	execv("$RUNC", argv);
	return 127;
}
C
# reaper CMD...: runs CMD as a child subreaper, as a runtime's shim does,
# reaping every orphan (a container's init once `create` has exited) as
# soon as it exits, until CMD ends; exits with CMD's status.
cat >"$WORK/reaper.c" <<'C'
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	if (argc < 2 || prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
		return 127;
	pid_t cmd = fork();
	if (cmd == 0) {
		execvp(argv[1], argv + 1);
		perror(argv[1]);
		_exit(127);
	}
	for (;;) {
		int st;
		pid_t p = wait(&st);
		if (p == cmd)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (p < 0)
			return 127;
	}
}
C
gcc -O2 -o "$WORK/reaper" "$WORK/reaper.c"
gcc -O2 -o "$WORK/execv" "$WORK/execv.c"
musl-gcc -O2 -static -o "$WORK/execv-musl" "$WORK/execv.c"
musl-gcc -O2 -static -o "$WORK/execv-runc" "$WORK/execv-runc.c"
gcc -O2 -static -o "$WORK/stub" "$WORK/stub.c"
gcc -O2 -o "$WORK/cpu" "$WORK/cpu.c"

# A userns + host-network bundle: runc's spec with a user namespace and no
# network one, the container's root mapped to 100000.
ROOTFS=$WORK/rootfs
mkdir -p "$ROOTFS"/{bin,proc,sys,dev,etc,tmp}
cp /bin/busybox "$ROOTFS/bin/busybox"
ln -s busybox "$ROOTFS/bin/true"
chown -R -h 100000:100000 "$ROOTFS"
"$RUNC" spec --bundle "$WORK"
jq --arg root "$ROOTFS" '
	.root.path = $root | .process.terminal = false | .process.args = ["/bin/true"]
	| .linux.namespaces = ([.linux.namespaces[] | select(.type != "network")] + [{type: "user"}])
	| .linux.uidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
	| .linux.gidMappings = [{containerID: 0, hostID: 100000, size: 65536}]' \
	"$WORK/config.json" >"$WORK/unconverted.json"
rm "$WORK/config.json"

# Everything below in a private mount namespace with a cgroup v2 view (runc
# on these hybrid-cgroup hosts) and a tmpfs on /run, as on a node: the
# bundles, the state root, the wrapper's records and probe cache live there.
# Under a subreaper, as under a shim: a container's init is reaped when it
# exits, not whenever this machine's init gets to it.
"$WORK/reaper" unshare --mount --propagation private bash -s "$W" "$RUNC" "$WORK" "$LOAD_N" "$ROUNDS" "$CPU_RUNS" <<'INNER'
set -euo pipefail
W=$1 RUNC=$2 WORK=$3 LOAD_N=$4 ROUNDS=$5 CPU_RUNS=$6
umount -R /sys/fs/cgroup 2>/dev/null || true
mount -t cgroup2 none /sys/fs/cgroup
mount -t tmpfs -o mode=755 tmpfs /run
printf '[log]\nfile = "/run/decisions.log"\n' >/run/config.toml
export USERNS_HOSTNET_CONFIG=/run/config.toml
STATE=/run/load-state
RECORDS=/run/userns-hostnet/converted

# The converted config, once, through the wrapper.
mkdir -p /run/b0
cp "$WORK/unconverted.json" /run/b0/config.json
USERNS_HOSTNET_RUNTIME=$WORK/stub "$W" --root "$STATE" create --bundle /run/b0 convert-once
cmp -s /run/b0/config.json "$WORK/unconverted.json" && { echo "load: the wrapper did not convert" >&2; exit 1; }
cp /run/b0/config.json "$WORK/converted.json"
rm -rf /run/b0 "$RECORDS"

# One container: create, start, delete; its own latency in µs on stdout.
cycle() { # program id bundle
	local t0=$EPOCHREALTIME
	"$1" --root "$STATE" create --bundle "$3" "$2" >/dev/null &&
		"$1" --root "$STATE" start "$2" >/dev/null &&
		"$1" --root "$STATE" delete --force "$2" >/dev/null || { echo "fail $2"; return; }
	local t1=$EPOCHREALTIME
	echo $((${t1/./} - ${t0/./}))
}
# round SIDE N R: N containers at once; their latencies appended to SIDE-N.
round() {
	local side=$1 n=$2 r=$3 prog=$RUNC spec=$WORK/converted.json i
	[ "$side" = wrapper ] && prog=$W spec=$WORK/unconverted.json
	[ "$side" = execv ] && prog=$WORK/execv-runc
	for ((i = 0; i < n; i++)); do
		mkdir -p "/run/b$i"
		cp "$spec" "/run/b$i/config.json"
	done
	for ((i = 0; i < n; i++)); do
		USERNS_HOSTNET_RUNTIME=$RUNC cycle "$prog" "$side-$r-$i" "/run/b$i" >"$WORK/lat.$i" &
	done
	wait
	cat "$WORK"/lat.* >>"$WORK/$side-$n"
	rm -f "$WORK"/lat.*
	if grep -q fail "$WORK/$side-$n"; then
		grep fail "$WORK/$side-$n" >&2
		echo "load: a container of $side, $n at once, failed" >&2
		exit 1
	fi
	# A delete through the wrapper removes the records of every container
	# whose init is gone; the last deletes of a round may have run while
	# their init was still exiting or waiting to be reaped.
	[ "$side" = wrapper ] && USERNS_HOSTNET_RUNTIME=$RUNC "$W" --root "$STATE" delete load-sweep 2>/dev/null || true
	local left
	left=$("$RUNC" --root "$STATE" list -q | wc -l)
	[ "$left" = 0 ] || { echo "load: $left containers left after $side, $n at once" >&2; exit 1; }
	left=$(find "$RECORDS" -type f 2>/dev/null | wc -l)
	[ "$left" = 0 ] || { echo "load: $left records left after $side, $n at once" >&2; exit 1; }
	left=$(grep -c ' /run/b' /proc/self/mountinfo || true)
	[ "$left" = 0 ] || { echo "load: $left mounts left under the bundles after $side, $n at once" >&2; exit 1; }
}
pct() { # percentile of the numbers in a file
	sort -n "$2" | awk -v p="$1" '{ a[NR] = $1 } END { i = int(NR * p / 100 + 0.999); if (i < 1) i = 1; print a[i] }'
}
# One untimed round each: the probe's answer is cached, the pages warm.
round wrapper 1 warm && round runc 1 warm && round execv 1 warm && rm -f "$WORK"/{wrapper,runc,execv}-1

# The sides take turns in a rotating order, so that none always runs
# right after the same other one (whose containers' teardown the kernel
# may still be finishing) or always first in a slower stretch of the VM.
SIDES=(wrapper runc execv)
for n in $LOAD_N; do
	for ((r = 0; r < ROUNDS; r++)); do
		for ((s = 0; s < 3; s++)); do
			round "${SIDES[(r + s) % 3]}" "$n" "$r"
		done
	done
	w50=$(pct 50 "$WORK/wrapper-$n") w99=$(pct 99 "$WORK/wrapper-$n")
	r50=$(pct 50 "$WORK/runc-$n") r99=$(pct 99 "$WORK/runc-$n")
	e50=$(pct 50 "$WORK/execv-$n") e99=$(pct 99 "$WORK/execv-$n")
	echo "$n $w50 $w99 $r50 $r99 $e50 $e99" >>"$WORK/latency"
done

# The wrapper's own CPU per converting create, and the C floor's.
mkdir -p /run/cpu
cp -a "$WORK/unconverted.json" /run/cpu/config.json
export USERNS_HOSTNET_RUNTIME=$WORK/stub
"$W" --root "$STATE" create --bundle /run/cpu cpu-warm
# In blocks taking turns (ten blocks of a tenth of the runs each), so that
# the VM's drift between blocks does not land on one program: the floors'
# own CPU is a few tens of µs, less than that drift.
BLOCKS=$((CPU_RUNS >= 10 ? 10 : 1))
cpu_block() { # name program...: one block's CPU per run, appended to name
	local name=$1
	shift
	"$WORK/cpu" $((CPU_RUNS / BLOCKS)) "$WORK/unconverted.json" /run/cpu/config.json "$@" --root "$STATE" create --bundle /run/cpu "$name" >>"$WORK/cpu.$name"
}
for ((b = 0; b < BLOCKS; b++)); do
	cpu_block w "$W"
	cpu_block f "$WORK/execv" "$WORK/stub"
	cpu_block m "$WORK/execv-musl" "$WORK/stub"
	cpu_block s "$WORK/stub"
done
mean() { awk '{ t += $1 } END { printf "%.0f", t / NR }' "$WORK/cpu.$1"; }
echo "$(mean w) $(mean f) $(mean m) $(mean s)" >"$WORK/cpu.out"

echo "| measurement | wrapper p50 / p99 (ms) | runc alone p50 / p99 (ms) | ratio p50 / p99 | a static musl C execv in front of runc: ratio p50 / p99 |"
echo "|---|---|---|---|---|"
while read -r n w50 w99 r50 r99 e50 e99; do
	awk -v n="$n" -v w50="$w50" -v w99="$w99" -v r50="$r50" -v r99="$r99" -v e50="$e50" -v e99="$e99" -v rounds="$ROUNDS" 'BEGIN {
		printf "| %d at once: create, start, delete (%d rounds) | %.1f / %.1f | %.1f / %.1f | %.3f / %.3f | %.3f / %.3f |\n",
			n, rounds, w50 / 1000, w99 / 1000, r50 / 1000, r99 / 1000, w50 / r50, w99 / r99, e50 / r50, e99 / r99 }'
done <"$WORK/latency"
read -r wrapper floor musl stub <"$WORK/cpu.out"
# The static musl floor's own CPU is a few tens of µs, near the stub's
# spread: its ratio only when it comes out above zero.
awk -v w="$wrapper" -v f="$floor" -v m="$musl" -v s="$stub" -v runs="$CPU_RUNS" 'BEGIN {
	printf "| CPU of one converting create, %d runs: the wrapper'"'"'s own / a C execv wrapper'"'"'s own (gcc, dynamic) | %d µs | %d µs | %.2f | |\n",
		runs, w - s, f - s, (w - s) / (f - s)
	printf "| CPU of one converting create, %d runs: the wrapper'"'"'s own / a C execv wrapper'"'"'s own (musl, static) | %d µs | %d µs | %s | |\n",
		runs, w - s, m - s, (m > s ? sprintf("%.1f", (w - s) / (m - s)) : "-") }'
INNER
