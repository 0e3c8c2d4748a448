#!/usr/bin/env bash
# The Kubernetes tier (tests/e2e_kubernetes*.rs): its three test binaries
# side by side, the one-node rows KUBE_TEST_THREADS at a time (default 4).
# A cluster spends most of its time waiting on the kubelet's own pace
# (sync periods, back-offs, grace periods: about a quarter of one core per
# row, measured), so clusters side by side cost little more than the
# longest row. Each cluster is private (its own directory, ports, daemon,
# runtime roots and mount namespace); the records of converted containers
# are the machine's, and each row picks its own out of them
# (tests/common/kube_pods.rs).
# `--build CARGO-FLAGS...` builds the three test binaries and lists them
# in target/kubernetes-tier.bins; `--run` runs what that list names (no
# cargo: it runs beside other builds without waiting for cargo's lock),
# writes each binary's output to target/test-e2e-kubernetes.log, one
# binary after the other, prints it, and exits non-zero if any failed.
# With only cargo flags, both. Run as root from anywhere.
set -uo pipefail
cd "$(dirname "$0")/.."

tests=(e2e_kubernetes e2e_kubernetes_fleet e2e_kubernetes_upgrade)
threads=${KUBE_TEST_THREADS:-4}
log=target/test-e2e-kubernetes.log
mkdir -p target

list=target/kubernetes-tier.bins
build() {
	cargo test "$@" --no-run --message-format=json "${tests[@]/#/--test=}" |
		jq -r 'select(.reason == "compiler-artifact" and .profile.test == true and .executable != null) | .target.name + " " + .executable' >"$list.tmp" &&
		mv "$list.tmp" "$list"
}
case ${1:-} in
--build) shift; build "$@"; exit ;;
--run) ;;
*) build "$@" || exit ;;
esac

mapfile -t bins <"$list"
[ "${#bins[@]}" -eq "${#tests[@]}" ] || {
	echo "kubernetes-tier: $list names ${#bins[@]} test binaries of the ${#tests[@]} expected (${tests[*]})" >&2
	exit 1
}

work=$(mktemp -d /tmp/uhn-kubernetes-tier.XXXXXX)
trap 'rm -rf "$work"' EXIT
pids=()
for entry in "${bins[@]}"; do
	name=${entry%% *} bin=${entry#* }
	(
		echo "     Running ${bin#"$PWD/"} ($name)"
		"$bin" --test-threads="$threads"
	) >"$work/$name.log" 2>&1 &
	pids+=("$!")
done
status=0
for pid in "${pids[@]}"; do
	wait "$pid" || status=1
done
for name in "${tests[@]}"; do
	cat "$work/$name.log"
done >"$log"
cat "$log"
exit "$status"
