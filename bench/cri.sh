#!/usr/bin/env bash
# CRI figures: pod start (RunPodSandbox + CreateContainer + StartContainer)
# and ExecSync through containerd's CRI (1.7.24 with runc 1.1.5, then 2.3.4
# with runc 1.4.3), for the wrapper on a userns
# pod, plain runc on a pod without a user namespace, and the wrapper on that
# same pod; medians of one run of tests/e2e_cri.rs's figures test, which
# prints them and never asserts them. As root, like the tier itself.
#
#   bench/cri.sh            the wrapper as the tier builds it (debug)
#   bench/cri.sh --release  a release build of the wrapper (slower to build)
set -euo pipefail
cd "$(dirname "$0")/.."

profile=()
target=debug
if [ "${1:-}" = --release ]; then
	profile=(--release)
	target=release
fi
./scripts/cri-tools.sh >/dev/null
cargo test --quiet "${profile[@]}" --test e2e_cri -- --exact --test-threads=1 \
	containerd_1_7::figures_printed_never_asserted containerd_2_3::figures_printed_never_asserted >/dev/null
echo "wrapper: $target build"
cat "${CARGO_TARGET_DIR:-target}/tmp/cri-figures.txt" "${CARGO_TARGET_DIR:-target}/tmp/cri-figures-containerd-2.3.txt"
