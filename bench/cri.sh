#!/usr/bin/env bash
# CRI figures: pod start (RunPodSandbox + CreateContainer + StartContainer)
# and ExecSync through containerd 1.7.24's CRI, for the wrapper on a userns
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
cargo test --quiet "${profile[@]}" --test e2e_cri figures_printed_never_asserted -- --exact >/dev/null
echo "wrapper: $target build"
cat "${CARGO_TARGET_DIR:-target}/tmp/cri-figures.txt"
