#!/usr/bin/env bash
# Thirty of the feature's pods at once through a real kubelet: a
# Deployment of 30 host-network, user-namespaced pods rolled out on
# containerd 2.4.2 + runc 1.5.3 under kubelet 1.37.2, through the
# wrapper's RuntimeClass and through runc alone's, in the order wrapper,
# plain, plain, wrapper; prints the time from `kubectl apply` to all 30
# ready for each. A benchmark: the test that runs it
# (tests/e2e_kubernetes.rs, containerd_2_4_rollout_of_thirty_kubelet_1_37,
# part of `make test`) asserts that every pod ran, those through the
# wrapper hardened, and that nothing is left; no time. As root, with what
# `make e2e-kubernetes-bins` builds (it runs it first).
#
#   bench/kubelet.sh            the wrapper as the tier builds it (debug)
#   bench/kubelet.sh --release  a release build of the wrapper (cargo's, glibc)
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "kubelet: run as root (it starts a cluster)" >&2; exit 1; }
profile=()
[ "${1:-}" = --release ] && profile=(--release)
make --no-print-directory e2e-kubernetes-bins >&2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
cargo test --quiet "${profile[@]}" --features test-hooks --test e2e_kubernetes -- --exact --nocapture \
	containerd_2_4_rollout_of_thirty_kubelet_1_37 >"$out" 2>&1 ||
	{ cat "$out" >&2; echo "kubelet: the rollout row failed" >&2; exit 1; }
echo "wrapper: ${profile[*]:-debug} build"
grep '^a Deployment of ' "$out"
