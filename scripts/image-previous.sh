#!/usr/bin/env bash
# Builds the installer image of the previous version, for the upgrade of
# tests/e2e_kubernetes_fleet.rs's two-node cluster (helm upgrade from it to this
# checkout's image):
#   localhost/userns-hostnet-installer:previous (IMAGE overrides the name)
# The previous version is REV (the first argument), by default the newest
# merge before HEAD on the first-parent line: what main ran before this
# branch. Its tree is checked out under target/previous/src and built by
# its own scripts/image.sh (scripts/previous-tree.sh: the target directory
# is shared, this checkout's files that build replaces are put back).
# Idempotent: the image of the same commit is not built again.
set -euo pipefail

cd "$(dirname "$0")/.."
. scripts/previous-tree.sh
previous_init image-previous.sh "${1:-}"
image=${IMAGE:-localhost/userns-hostnet-installer:previous}
stamp=target/previous/commit

if [ "$(cat "$stamp" 2>/dev/null)" = "$commit" ] && podman image exists "$image"; then
	echo "image-previous.sh: $image is $commit, built already"
	exit 0
fi

start=$SECONDS
rm -f "$stamp"
previous_checkout
# This machine's platform alone: the cluster's nodes are this machine
# (an image.sh that builds an index makes IMAGE_PLATFORMS's one platform a
# plain image, as before; an older one builds that alone anyway).
case $(uname -m) in
x86_64) platform=linux/amd64 ;;
aarch64) platform=linux/arm64 ;;
*) platform=linux/$(uname -m) ;;
esac
IMAGE="$image-build" IMAGE_PLATFORMS=$platform "$src/scripts/image.sh" >/dev/null
podman tag "$image-build" "$image"
podman rmi "$image-build" >/dev/null
previous_remove
echo "$commit" >"$stamp"
echo "image-previous.sh: $image from $commit ($(git log -1 --format=%s "$commit" | cut -c1-60)) in $((SECONDS - start))s"
