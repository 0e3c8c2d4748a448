# Sourced by scripts/image-previous.sh and scripts/deb-previous.sh: the
# previous version's tree, checked out with `git worktree` under
# target/previous/src and built there by its own scripts, sharing this
# checkout's target directory (the dependencies are built once). Needs the
# repository's history (a clone, not an export). From the checkout's top:
#
#   previous_init NAME REV   $commit: REV, by default the newest merge
#                            before HEAD on the first-parent line (what main
#                            ran before this branch); NAME is the caller's,
#                            for its messages. Takes target/previous/lock:
#                            one build of the tree at a time.
#   previous_checkout        the tree at $src; this checkout's files that
#                            such a build writes over are kept, and put back
#                            when the caller exits
#   previous_remove          the tree removed

previous_init() {
	local name=$1 rev
	if ! rev=${2:-$(git rev-list --first-parent --merges -n 1 HEAD^ 2>/dev/null)} || [ -z "$rev" ]; then
		echo "$name: no previous version: this checkout has no merge before HEAD in its git history (a shallow clone or an export?); name one: scripts/$name REV" >&2
		exit 1
	fi
	commit=$(git rev-parse --verify "$rev^{commit}")
	mkdir -p target/previous
	exec 9>target/previous/lock
	flock 9
}

src=target/previous/src
previous_keep=target/previous/keep
# The files of this checkout the other build writes over: the installer
# image's stage, the release binaries (of the host's triple, glibc's, for
# versions before musl; of the release triple since), the man pages and
# completions.
previous_ours=(target/image target/man target/completions)
for t in "$(rustc -vV | sed -n 's/^host: //p')" "$(./scripts/release-triple.sh)"; do
	previous_ours+=("target/$t/release/userns-hostnet" "target/$t/release/userns-hostnet-runtime")
done

previous_restore() {
	local f
	[ -L "$src/target" ] && rm "$src/target"
	for f in "${previous_ours[@]}"; do
		if [ -e "$previous_keep/$f" ]; then
			rm -rf "$f"
			cp -a "$previous_keep/$f" "$f"
		fi
	done
	rm -rf "$previous_keep"
}

previous_checkout() {
	local f
	if [ -e "$src" ]; then
		rm -f "$src/target"
		git worktree remove --force "$src"
	fi
	rm -rf "$previous_keep"
	for f in "${previous_ours[@]}"; do
		if [ -e "$f" ]; then
			mkdir -p "$previous_keep/$(dirname "$f")"
			cp -a "$f" "$previous_keep/$f"
		fi
	done
	trap previous_restore EXIT
	git worktree add --detach "$src" "$commit" >/dev/null
	ln -s "$PWD/target" "$src/target"
}

previous_remove() {
	rm "$src/target"
	git worktree remove --force "$src"
}
