#!/usr/bin/env bash
# Builds the installer image of the previous version, for the upgrade of
# tests/e2e_kubernetes.rs's two-node cluster (helm upgrade from it to this
# checkout's image):
#   localhost/userns-hostnet-installer:previous (IMAGE overrides the name)
# The previous version is REV (the first argument), by default the newest
# merge before HEAD on the first-parent line: what main ran before this
# branch. Its tree is checked out with `git worktree` under
# target/previous/src and built by its own scripts/image.sh, sharing this
# checkout's target directory (the dependencies are built once; the
# workspace's crates, at another path, are built apart). This checkout's
# staged and release binaries, which that build replaces, are put back
# afterwards. Needs the repository's history (a clone, not an export).
# Idempotent: the image of the same commit is not built again.
set -euo pipefail

cd "$(dirname "$0")/.."
if ! rev=${1:-$(git rev-list --first-parent --merges -n 1 HEAD^ 2>/dev/null)} || [ -z "$rev" ]; then
	echo "image-previous.sh: no previous version: this checkout has no merge before HEAD in its git history (a shallow clone or an export?); name one: scripts/image-previous.sh REV" >&2
	exit 1
fi
commit=$(git rev-parse --verify "$rev^{commit}")
image=${IMAGE:-localhost/userns-hostnet-installer:previous}
stamp=target/previous/commit

if [ "$(cat "$stamp" 2>/dev/null)" = "$commit" ] && podman image exists "$image"; then
	echo "image-previous.sh: $image is $commit, built already"
	exit 0
fi

start=$SECONDS
src=target/previous/src
keep=target/previous/keep
triple=$(rustc -vV | sed -n 's/^host: //p')
# The files of this checkout the other build writes over.
ours=(target/image/userns-hostnet target/image/userns-hostnet-runtime
	"target/$triple/release/userns-hostnet" "target/$triple/release/userns-hostnet-runtime")
restore() {
	local f
	[ -L "$src/target" ] && rm "$src/target"
	for f in "${ours[@]}"; do
		if [ -f "$keep/$f" ]; then
			cp -a "$keep/$f" "$f"
		fi
	done
	rm -rf "$keep"
}
if [ -e "$src" ]; then
	rm -f "$src/target"
	git worktree remove --force "$src"
fi
rm -f "$stamp"
rm -rf "$keep"
for f in "${ours[@]}"; do
	if [ -f "$f" ]; then
		mkdir -p "$keep/$(dirname "$f")"
		cp -a "$f" "$keep/$f"
	fi
done
trap restore EXIT
git worktree add --detach "$src" "$commit" >/dev/null
ln -s "$PWD/target" "$src/target"
IMAGE="$image-build" "$src/scripts/image.sh" >/dev/null
podman tag "$image-build" "$image"
podman rmi "$image-build" >/dev/null
rm "$src/target"
git worktree remove --force "$src"
echo "$commit" >"$stamp"
echo "image-previous.sh: $image from $commit ($(git log -1 --format=%s "$commit" | cut -c1-60)) in $((SECONDS - start))s"
