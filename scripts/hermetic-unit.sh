#!/usr/bin/env bash
# The libraries' unit tests (every crate of the workspace: the engine's,
# the root crate's) as a contributor without root or runtimes runs them: as
# nobody, with an empty environment, in a private mount namespace where
# runc, crun, youki, containerd and podman are hidden. Proves that
# `cargo test --lib` needs neither. Run as root (it makes the namespace),
# after the libraries' tests are built with the same cargo flags ($@).
# With `--target TRIPLE` of another architecture the tests run through
# cargo's runner for it, CARGO_TARGET_<TRIPLE>_RUNNER (qemu-user, see the
# Makefile's arm64-check), as `cargo test` runs them; HERMETIC_TEST_ARGS
# are given to each test binary.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "hermetic-unit: run as root (it hides the runtimes in a private mount namespace)" >&2; exit 1; }

runner=
args=("$@")
for i in "${!args[@]}"; do
	case ${args[$i]} in
	--target) target=${args[$((i + 1))]:-} ;;
	--target=*) target=${args[$i]#--target=} ;;
	*) continue ;;
	esac
	if [ "$target" != "$(rustc -vV | sed -n 's/^host: //p')" ]; then
		var=CARGO_TARGET_$(tr 'a-z-' 'A-Z_' <<<"$target")_RUNNER
		runner=${!var:-}
		[ -n "$runner" ] || { echo "hermetic-unit: tests for $target need a runner on this machine: set $var" >&2; exit 1; }
	fi
done
export HERMETIC_RUNNER=$runner
# Arguments for the test binaries (the Makefile's --skip list under qemu-user).
export HERMETIC_TEST_ARGS=${HERMETIC_TEST_ARGS:-}

mapfile -t bins < <(cargo test "$@" --lib --no-run --message-format=json 2>/dev/null |
	jq -r 'select(.reason == "compiler-artifact" and .profile.test == true and .target.kind == ["lib"]) | .target.name + " " + .executable')
[ "${#bins[@]}" -ge 2 ] || { echo "hermetic-unit: ${#bins[@]} library test binaries built, expected one per crate" >&2; exit 1; }

work=$(mktemp -d /tmp/uhn-hermetic.XXXXXX)
trap 'rm -rf "$work"' EXIT
for entry in "${bins[@]}"; do
	name=${entry%% *} bin=${entry#* }
	[ -x "$bin" ] || { echo "hermetic-unit: no test binary for $name" >&2; exit 1; }
	install -m 0755 "$bin" "$work/$name-tests"
done
: >"$work/absent"
chmod 0644 "$work/absent"
chmod 0755 "$work"

hidden=()
for tool in runc crun youki containerd podman; do
	while read -r p; do hidden+=("$p"); done < <(type -ap "$tool" 2>/dev/null; ls -d /usr/sbin/"$tool" /usr/bin/"$tool" /usr/local/bin/"$tool" 2>/dev/null)
done

# shellcheck disable=SC2016
unshare -m bash -c '
	set -euo pipefail
	work=$1; shift
	for p in "$@"; do mount --bind "$work/absent" "$p"; done
	for t in runc crun youki; do
		if PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$t" --version >/dev/null 2>&1; then
			echo "hermetic-unit: $t still runs" >&2; exit 1
		fi
	done
	cd "$work"
	status=0
	for tests in "$work"/*-tests; do
		echo "hermetic-unit: ${tests##*/}${HERMETIC_RUNNER:+ (through $HERMETIC_RUNNER)}"
		setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
			env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$work" $HERMETIC_RUNNER "$tests" --test-threads=2 $HERMETIC_TEST_ARGS || status=1
	done
	exit $status
' hermetic "$work" "${hidden[@]}"
