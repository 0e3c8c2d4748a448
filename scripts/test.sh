#!/usr/bin/env bash
# `make test`: every check and both tiers, arranged for a machine of two
# cores in four lanes:
# - tools, from the start: what a machine builds once (helm, which the
#   Kubernetes tier needs, then at a lower priority youki, cargo-deb,
#   cargo-generate-rpm and qemu-user);
# - the Kubernetes tier (scripts/kubernetes-tier.sh), as soon as what it
#   needs is built, at the normal priority: its clusters mostly wait on
#   the kubelet's pace, and their timeouts should measure the kubelet, not
#   the compiler beside them;
# - the stages that only need the CPU, beside the clusters at a lower
#   priority: clippy, the packages, arm64;
# - the unit tier and hermetic beside the clusters, then the other e2e
#   tests, built beside the clusters and run after them.
# A failed stage does not stop the others: each is named at the end, the
# exit status is non-zero, and the last line totals every test binary.
# Each stage's start, wall and CPU time are logged (`== ` lines); the
# background lanes write to target/lane-*.log, shown at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
make=${MAKE:-make}

# `make TARGETS...`, timed; non-zero when it fails.
stage() {
	local start=$SECONDS status=0
	echo "== $(date -u +%T) make $*"
	/usr/bin/time -f "== make $* cpu: %U s user, %S s system" "$make" --no-print-directory "$@" || status=$?
	echo "== $(date -u +%T) make $* $([ "$status" = 0 ] && echo done || echo FAILED) after $((SECONDS - start)) s"
	return "$status"
}

failed=()
run() { stage "$@" || failed+=("$*"); }

mkdir -p target
rm -f target/lane-*.log target/lane-*.done target/test*.log

run fmt-check

# Tools: helm at the normal priority (the Kubernetes tier waits for it),
# then youki (for the other e2e tests, which run last), the packagers and
# qemu-user at a lower one.
(
	s=0
	stage helm || s=1
	touch target/lane-tools.helm.done
	renice -n 10 "$BASHPID" >/dev/null
	stage youki || s=1
	touch target/lane-tools.youki.done
	for t in package-tools qemu; do stage "$t" || s=1; done
	touch target/lane-tools.all.done
	exit "$s"
) >target/lane-tools.log 2>&1 &
tools=$!
# Waits until the tools lane has passed the step that writes $1.
after_tool() {
	while [ ! -e "target/lane-tools.$1.done" ] && kill -0 "$tools" 2>/dev/null; do sleep 1; done
}

run bins cri-tools kubernetes image image-previous
after_tool helm
run e2e-kubernetes-bins
(
	start=$SECONDS
	echo "== $(date -u +%T) scripts/kubernetes-tier.sh --run"
	s=0
	./scripts/kubernetes-tier.sh --run || s=$?
	echo "== $(date -u +%T) the Kubernetes tier $([ "$s" = 0 ] && echo done || echo FAILED) after $((SECONDS - start)) s"
	exit "$s"
) >target/lane-kubernetes.log 2>&1 &
kubernetes=$!

# The stages that only need the CPU, beside the clusters at a lower
# priority (clippy in a target directory of its own, so that no build waits
# for its cargo lock).
(
	renice -n 10 "$BASHPID" >/dev/null
	s=0
	stage clippy || s=1
	after_tool all
	stage package-check || s=1
	stage arm64-check || s=1
	exit "$s"
) >target/lane-builds.log 2>&1 &
builds=$!

# Beside the clusters: the unit tier and hermetic (no runtime, no root
# state), and the other e2e tests' binaries; those tests run after the
# clusters (they share the machine's records of converted containers, and
# a row cannot tell their transient pending records of failed creates from
# its own).
run unit
run hermetic
run e2e-runtimes-bins
wait "$kubernetes" || failed+=("e2e-kubernetes (target/lane-kubernetes.log)")
after_tool youki
run e2e-runtimes
wait "$builds" || failed+=("builds (target/lane-builds.log)")
wait "$tools" || failed+=("tools (target/lane-tools.log)")

for lane in tools builds; do
	echo "== the $lane lane:"
	if printf '%s\n' "${failed[@]}" | grep -q "lane-$lane.log"; then cat "target/lane-$lane.log"; else grep '^== ' "target/lane-$lane.log"; fi
done
echo "== the Kubernetes tier:"
cat target/lane-kubernetes.log

cat target/test-unit.log target/test-e2e.log target/test-e2e-kubernetes.log >target/test.log
if [ "${#failed[@]}" -gt 0 ]; then
	printf 'make test: failed: %s\n' "${failed[@]}"
fi
awk '/^test result:/ { p += $4; f += $6; i += $8 } END { printf "%d passed, %d failed, %d skipped\n", p, f, i }' target/test.log
[ "${#failed[@]}" -eq 0 ]
