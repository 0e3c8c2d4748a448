#!/usr/bin/env bash
# What of the arm64 build can be checked on an x86_64 machine (make
# arm64-check runs this after make package-arm64 and make image):
#   - the aarch64 release binaries: ARM aarch64, static (file, readelf);
#   - the wrapper under qemu-user (trixie's qemu-aarch64 10, scripts/qemu.sh)
#     in front of a stub runtime (a shell
#     script that records its argv, answers `features` like runc and
#     otherwise prints a marker and exits 42): every other subcommand is
#     passed through with its argv, stdout and exit status; a userns +
#     host-network create is converted in config.json and then the
#     runtime is executed with the argv unchanged; a create that needs
#     nothing leaves config.json's bytes and inode; a net.* sysctl is
#     refused with one line (and a logrus JSON line in --log) before the
#     runtime runs. Kernel-facing behaviour (mounts, namespaces) cannot
#     run under qemu-user; the x86_64 e2e tier covers it;
#   - the admin tool under qemu-user: version and explain;
#   - the arm64 .deb and .rpm: architecture, contents (the same lists as
#     x86_64's), the aarch64 binaries inside, lintian and rpmlint; each
#     installed, run, refused removal while registered, removed and purged
#     in a scratch root (dpkg --root, rpm --root), in a user namespace of
#     this test's with a binfmt_misc of its own, where qemu-aarch64
#     runs the aarch64 binaries (the maintainer scripts run the packaged
#     `userns-hostnet registrations`): nothing of this machine changes;
#   - the installer image: the index lists linux/amd64 and linux/arm64,
#     each entry's image holds the release binaries of its architecture,
#     and this machine's platform is what the index's name resolves to
#     locally and what target/image (the tests' build context) holds.
# Ends with `arm64-check: N passed, N failed`. Needs root, binutils, file, jq, lintian, rpm, rpmlint, busybox-static, podman.
set -euo pipefail

cd "$(dirname "$0")/.."
triple=$(./scripts/release-triple.sh arm64)
out=target/$triple/release
host=$(rustc -vV | sed -n 's/^host: //p')
native=false
[ "${host%%-*}" = aarch64 ] && native=true
version=$(awk -F'"' '/^version = / {print $2; exit}' Cargo.toml)
image=${IMAGE:-localhost/userns-hostnet-installer:$version}
here=packaging

passed=0
failed=0
trap 'echo "arm64-check: $passed passed, $failed failed"' EXIT
ok() { passed=$((passed + 1)); echo "ok   $*"; }
fail() { failed=$((failed + 1)); echo "FAIL $*" >&2; exit 1; }
same() { # what expected-file actual-text
	diff -u --label "expected $1" --label "actual $1" "$2" <(printf '%s\n' "$3") || fail "$1 differs from $2"
	ok "$1 matches $2"
}

[ "$(id -u)" = 0 ] || fail "run as root (podman's store, the scratch roots' user namespace)"
for tool in file readelf jq lintian rpm rpmlint busybox podman dpkg-deb unshare; do
	command -v "$tool" >/dev/null || fail "$tool is missing (make deps)"
done
if $native; then
	arm=()
else
	# trixie's qemu-user 10 (scripts/qemu.sh; Debian 12's 7.2 lacks
	# mount_setattr and openat2, which the wrapper calls).
	qemu=${QEMU_AARCH64:-$(./scripts/qemu.sh)}
	[ -x "$qemu" ] || fail "no qemu-aarch64 at $qemu: run scripts/qemu.sh"
	arm=("$qemu")
fi

work=$(mktemp -d /tmp/uhn-arm64.XXXXXX)
cleanup() {
	local m
	# Mounts of the scratch roots live in the user namespace's own mount
	# namespace and go with it; the image's mounts are podman's.
	for m in "${mounted[@]}"; do podman image unmount "$m" >/dev/null 2>&1 || true; done
	rm -rf "$work"
	echo "arm64-check: $passed passed, $failed failed"
}
mounted=()
trap cleanup EXIT

# ---- the binaries
for bin in userns-hostnet userns-hostnet-runtime; do
	[ -x "$out/$bin" ] || fail "$out/$bin is missing: make release-arm64"
	desc=$(file -b "$out/$bin")
	echo "     file $out/$bin: $desc"
	case $desc in
	*", ARM aarch64,"*) ;;
	*) fail "$out/$bin is not an ARM aarch64 binary: $desc" ;;
	esac
	case $desc in
	*"static-pie linked"* | *"statically linked"*) ;;
	*) fail "$out/$bin is not statically linked: $desc" ;;
	esac
	if readelf -lW "$out/$bin" | grep -q INTERP || readelf -dW "$out/$bin" | grep -q '(NEEDED)'; then
		fail "$out/$bin has a program interpreter or needs shared libraries: $(readelf -dW "$out/$bin" | grep '(NEEDED)')"
	fi
done
ok "the aarch64 wrapper and admin tool are ARM aarch64, static (no interpreter, no NEEDED)"

# ---- the wrapper under qemu-user, in front of a stub runtime
marker=stub-runtime-ran
features='{"ociVersionMin":"1.0.0","mountOptions":["bind","rbind","ro","rro"]}'
cat >"$work/stub-runtime" <<EOF
#!/bin/sh
printf '%s\n' "\$@" >"$work/argv"
if [ "\$1" = features ]; then echo '$features'; exit 0; fi
echo $marker
exit 42
EOF
chmod 0755 "$work/stub-runtime"
printf '[log]\nfile = "%s"\n' "$work/decisions.log" >"$work/config.toml"
config=$work/config.toml

# wrapper ARGS...: the aarch64 wrapper under qemu-user, its exit status in
# $rc, its stdout and stderr in $work/stdout and $work/stderr, the argv
# the stub was given in $work/argv (removed first).
wrapper() {
	rm -f "$work/argv"
	set +e
	USERNS_HOSTNET_RUNTIME=$work/stub-runtime USERNS_HOSTNET_CONFIG=$config \
		"${arm[@]}" "$out/userns-hostnet-runtime" "$@" </dev/null >"$work/stdout" 2>"$work/stderr"
	rc=$?
	set -e
}
describe() { echo "exit $rc; stdout: $(cat "$work/stdout"); stderr: $(cat "$work/stderr")"; }
# The stub ran with exactly ARGS, printed its marker (exit 42), and the
# wrapper printed nothing of its own.
ran_with() {
	[ "$rc" = 42 ] && [ "$(cat "$work/stdout")" = "$marker" ] || fail "$what: the runtime did not run: $(describe)"
	[ ! -s "$work/stderr" ] || fail "$what: stderr is not empty: $(describe)"
	[ "$(cat "$work/argv")" = "$(printf '%s\n' "$@")" ] || fail "$what: the runtime got $(paste -sd' ' "$work/argv"), not $*"
}

for args in "state c1" "--root /run/uhn-arm64 kill c1 KILL" "delete --force c1" "--log $work/l.json exec --process $work/p.json c1" "frobnicate --x"; do
	what="pass-through of '$args'"
	# shellcheck disable=SC2086
	wrapper $args
	# shellcheck disable=SC2086
	ran_with $args
done
[ ! -e "$work/decisions.log" ] || fail "a pass-through wrote the decision log: $(cat "$work/decisions.log")"
ok "pass-through (state, kill, delete, exec, an unknown subcommand): the runtime runs with the argv unchanged, its stdout and exit status, nothing else"
wrapper features
[ "$rc" = 0 ] && [ "$(cat "$work/stdout")" = "$features" ] && [ ! -s "$work/stderr" ] || fail "features is not the runtime's answer: $(describe)"
ok "features: the runtime's answer, byte for byte"

# A user namespace on the host network: runc spec with the edits of
# TESTING.md (as tests/hostile.rs makes it).
base=$(jq '.linux.namespaces = ([.linux.namespaces[] | select(.type != "network")] + [{type: "user"}])
	| .linux.uidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
	| .linux.gidMappings = [{containerID: 0, hostID: 100000, size: 65536}]' crates/engine/fixtures/runc-spec.json)
bundle() { # name spec-json
	mkdir -p "$work/$1/rootfs"
	printf '%s\n' "$2" >"$work/$1/config.json"
}

bundle convert "$base"
b=$work/convert
what="converting create"
wrapper --root "$work/state" --log "$b/log.json" --log-format json create --bundle "$b" --pid-file "$b/init.pid" c-convert
ran_with --root "$work/state" --log "$b/log.json" --log-format json create --bundle "$b" --pid-file "$b/init.pid" c-convert
sys=$(jq -c '[.mounts[] | select(.destination == "/sys")]' "$b/config.json")
[ "$sys" = '[{"destination":"/sys","type":"bind","source":"/sys","options":["rbind","rro","nosuid","nodev","noexec","rprivate"]}]' ] ||
	fail "$what: /sys is not the host's bound rbind,rro: $sys"
caps=$(jq -c '[.process.capabilities[][]] | unique' "$b/config.json")
jq -e '[.process.capabilities[][]] | index("CAP_NET_BIND_SERVICE") == null' "$b/config.json" >/dev/null ||
	fail "$what: CAP_NET_BIND_SERVICE is kept: $caps"
[ "$(jq -c 'del(.mounts, .process.capabilities)' "$b/config.json")" = "$(jq -c 'del(.mounts, .process.capabilities)' <<<"$base")" ] ||
	fail "$what: more than the mounts and capabilities changed"
grep -F '"id":"c-convert"' "$work/decisions.log" | grep -qF '"outcome":"converted"' ||
	fail "$what: no converted line in the decision log: $(cat "$work/decisions.log" 2>&1)"
[ ! -s "$b/log.json" ] || fail "$what: the runtime's --log got lines of the wrapper: $(cat "$b/log.json")"
ok "a userns + host-network create: config.json converted (/sys rbind,rro,nosuid,nodev,noexec,rprivate; the net capabilities dropped: $caps), logged, then the runtime executed with the argv unchanged"
config=$work/config.toml

bundle untouched "$(jq . crates/engine/fixtures/runc-spec.json)"
b=$work/untouched
before=$(stat -c '%i %s %Y' "$b/config.json")$(sha256sum <"$b/config.json")
what="create of a container that needs nothing"
wrapper create --bundle "$b" c-untouched
ran_with create --bundle "$b" c-untouched
[ "$(stat -c '%i %s %Y' "$b/config.json")$(sha256sum <"$b/config.json")" = "$before" ] || fail "$what: config.json was rewritten"
ok "a create that needs nothing: config.json keeps its bytes and inode, the runtime runs"

bundle refuse "$(jq '.linux.sysctl = {"net.ipv4.ip_forward": "1"}' <<<"$base")"
b=$work/refuse
before=$(sha256sum <"$b/config.json")
wrapper --log "$b/log.json" --log-format json create --bundle "$b" c-refuse
[ "$rc" = 1 ] && [ ! -s "$work/stdout" ] && [ "$(wc -l <"$work/stderr")" = 1 ] || fail "net.* sysctl: not one refusal line and exit 1: $(describe)"
grep -q '^userns-hostnet-runtime: refused: sysctl: linux.sysctl: net.ipv4.ip_forward cannot be set' "$work/stderr" || fail "net.* sysctl: $(describe)"
[ ! -e "$work/argv" ] || fail "net.* sysctl: the runtime ran"
[ "$(sha256sum <"$b/config.json")" = "$before" ] || fail "net.* sysctl: config.json changed"
jq -e 'select(.level == "error") | .msg | contains("net.ipv4.ip_forward")' "$b/log.json" >/dev/null || fail "net.* sysctl: no logrus error line in --log: $(cat "$b/log.json" 2>&1)"
ok "a net.* sysctl is refused: exit 1, one line ($(cat "$work/stderr")), the error in --log, the runtime not run, config.json unchanged"

# ---- the admin tool under qemu-user
set +e
v=$("${arm[@]}" "$out/userns-hostnet" version 2>&1)
rc=$?
set -e
[ "$rc" = 0 ] && grep -q "$version" <<<"$v" || fail "userns-hostnet version (exit $rc): $v"
bundle explain "$base"
set +e
e=$(USERNS_HOSTNET_CONFIG=$config "${arm[@]}" "$out/userns-hostnet" explain "$work/explain" 2>&1)
rc=$?
set -e
[ "$rc" = 0 ] && grep -q 'rro' <<<"$e" || fail "userns-hostnet explain of a userns + host-network bundle (exit $rc): $e"
ok "the admin tool: version ($(head -1 <<<"$v")) and explain of a bundle that needs the conversion"

# ---- the packages
deb=$(ls "target/$triple"/debian/userns-hostnet_*_arm64.deb 2>/dev/null) || fail "no arm64 .deb in target/$triple/debian: make package-arm64"
rpm=$(ls "target/$triple"/generate-rpm/userns-hostnet-*.aarch64.rpm 2>/dev/null) || fail "no aarch64 .rpm in target/$triple/generate-rpm: make package-arm64"
[ "$(dpkg-deb -f "$deb" Architecture)" = arm64 ] || fail "$deb: Architecture $(dpkg-deb -f "$deb" Architecture)"
same "arm64 deb contents" "$here/expected-deb-contents.txt" \
	"$(dpkg-deb --contents "$deb" | awk '{ t = substr($1, 1, 1); p = $6; if (t == "l") p = p " -> " $8; print t, p }' | sort)"
for bin in userns-hostnet userns-hostnet-runtime; do
	dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/bin/$bin" | cmp -s - "$out/$bin" || fail "the .deb's /usr/bin/$bin is not $out/$bin"
done
lint=$(lintian "$deb" 2>&1 || true)
# lintian calls a static executable without a dynamic section an error;
# x86_64's static-pie binaries have one, these (static, not PIE: rustc has
# no static-pie for aarch64) do not. Static is the design; any other
# error fails.
expected='^E: userns-hostnet: statically-linked-binary \[usr/bin/userns-hostnet(-runtime)?\]$'
errors=$(grep '^E:' <<<"$lint" | grep -Ev "$expected" || true)
[ -z "$errors" ] || fail "lintian errors on $deb:
$lint"
ok "$(basename "$deb"): Architecture arm64, the aarch64 binaries, lintian: no errors but statically-linked-binary for the two static binaries ($(grep -c '^W:' <<<"$lint" || true) warnings)"

[ "$(rpm -qp --qf '%{ARCH}' "$rpm" 2>/dev/null)" = aarch64 ] || fail "$rpm: arch $(rpm -qp --qf '%{ARCH}' "$rpm" 2>/dev/null)"
same "aarch64 rpm contents" "$here/expected-rpm-contents.txt" "$(rpm -qlp "$rpm" 2>/dev/null | sort)"
same "aarch64 rpm config files" "$here/expected-rpm-configfiles.txt" "$(rpm -qp --configfiles "$rpm" 2>/dev/null | sort)"
for bin in userns-hostnet userns-hostnet-runtime; do
	rpm2archive - <"$rpm" | tar -xzO "./usr/bin/$bin" | cmp -s - "$out/$bin" || fail "the .rpm's /usr/bin/$bin is not $out/$bin"
done
set +e
rlint=$(rpmlint -r "$here/rpmlintrc" "$rpm" 2>&1)
rc=$?
set -e
[ "$rc" = 0 ] || fail "rpmlint on $rpm (exit $rc):
$rlint"
ok "$(basename "$rpm"): arch aarch64, the aarch64 binaries, rpmlint: $(tail -1 <<<"$rlint")"

# The scratch roots: busybox for the maintainer scripts' shell and tools,
# /dev/null, and a binfmt_misc of the user namespace's own that hands
# aarch64 ELF files to qemu-aarch64.
scratch() { # dir
	mkdir -p "$1"/{bin,sbin,usr/bin,usr/sbin,etc,tmp,dev,run,var/log}
	cp "$(command -v busybox)" "$1/bin/busybox"
	for app in $(busybox --list); do
		[ -e "$1/bin/$app" ] || ln -s busybox "$1/bin/$app"
	done
	# dpkg wants these in the root's PATH; nothing here needs them to act.
	for prog in ldconfig start-stop-daemon; do
		printf '#!/bin/sh\nexit 0\n' >"$1/sbin/$prog"
		chmod 0755 "$1/sbin/$prog"
	done
	: >"$1/dev/null"
	# A system's /etc and /usr/bin are never empty (dpkg removes a
	# directory of the package that nothing else holds).
	echo scratch >"$1/etc/hostname"
	ln -s ../../bin/busybox "$1/usr/bin/env"
}
# aarch64 ELF executables: the header's class, data, version and machine
# (183), as qemu-user-static registers them; F: the emulator is opened
# now, so it works in a chroot.
register=
if ! $native; then
	register=':uhn-arm64-check:M::\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:'"$qemu"':F'
fi

# A stand-in for the arm64 runc the .deb depends on (a scratch root has
# no arm64 package to offer): the dependency is checked, not forced.
mkdir -p "$work/runc-standin/DEBIAN"
printf 'Package: runc\nVersion: 0~scratch\nArchitecture: arm64\nMaintainer: scratch <scratch@localhost>\nDescription: stand-in for the scratch root of arm64-check\n' \
	>"$work/runc-standin/DEBIAN/control"
dpkg-deb --build "$work/runc-standin" "$work/runc-standin.deb" >/dev/null

mkdir -p "$work/deb-root" "$work/rpm-root"
scratch "$work/deb-root"
scratch "$work/rpm-root"
cp "$deb" "$work/userns-hostnet.deb"
cp "$rpm" "$work/userns-hostnet.rpm"
cat >"$work/in-namespace.sh" <<'EOF'
set -euo pipefail
work=$1 register=$2
step() { echo "step $*"; }
fail() { echo "FAIL $*" >&2; exit 1; }
if [ -n "$register" ]; then
	mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || fail "no binfmt_misc of this user namespace's own (a kernel before 6.7?)"
	printf '%s' "$register" >/proc/sys/fs/binfmt_misc/register
fi
for r in deb-root rpm-root; do mount --bind /dev/null "$work/$r/dev/null"; done
# Everything of a root but the package managers' own state.
files() { (cd "$1" && find . -path ./var/lib/dpkg -prune -o -path ./var/lib/rpm -prune -o -print | sort); }

R=$work/deb-root
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" "$R/var/lib/dpkg/triggers"
: >"$R/var/lib/dpkg/status"
: >"$R/var/lib/dpkg/available"
dpkg --root="$R" --log="$work/dpkg.log" --add-architecture arm64
dpkg --root="$R" --log="$work/dpkg.log" -i "$work/runc-standin.deb" >/dev/null
empty=$(files "$R")
out=$(dpkg --root="$R" --log="$work/dpkg.log" -i "$work/userns-hostnet.deb" 2>&1) || fail "dpkg --root -i: $out"
grep -q 'nothing has been registered yet' <<<"$out" || fail "dpkg -i: no post-install message: $out"
[ "$(dpkg --root="$R" --log="$work/dpkg.log" -s userns-hostnet | sed -n 's/^Status: //p')" = "install ok installed" ] || fail "dpkg -i: $(dpkg --root="$R" --log="$work/dpkg.log" -s userns-hostnet)"
[ "$(dpkg --root="$R" --log="$work/dpkg.log" -s userns-hostnet | sed -n 's/^Architecture: //p')" = arm64 ] || fail "installed as $(dpkg --root="$R" --log="$work/dpkg.log" -s userns-hostnet | sed -n 's/^Architecture: //p')"
step "dpkg -i of the arm64 .deb (its dependency runc met by an arm64 package): installed, arm64, the post-install message"
v=$(chroot "$R" /usr/bin/userns-hostnet-runtime-crun --version 2>&1 || true)
grep -q 'crun, named by this wrapper.s file name, is not an executable in PATH' <<<"$v" || fail "the installed wrapper's crun link: $v"
chroot "$R" /usr/bin/userns-hostnet registrations >/dev/null || fail "registrations in the scratch root: $(chroot "$R" /usr/bin/userns-hostnet registrations 2>&1)"
step "the installed aarch64 binaries run (the -crun link names the missing crun; registrations: none)"
mkdir -p "$R/etc/userns-hostnet/handlers/uhn"
ln -s /usr/bin/userns-hostnet-runtime "$R/etc/userns-hostnet/handlers/uhn/userns-hostnet-runtime"
if out=$(dpkg --root="$R" --log="$work/dpkg.log" -r userns-hostnet 2>&1); then fail "dpkg -r while a handler's link names the wrapper: $out"; fi
grep -q 'not removing: the runtime wrapper is still registered' <<<"$out" || fail "dpkg -r while registered: $out"
[ -x "$R/usr/bin/userns-hostnet-runtime" ] || fail "the refused removal deleted the wrapper"
rm -r "$R/etc/userns-hostnet/handlers"
step "dpkg -r while registered is refused by the prerm's aarch64 userns-hostnet registrations; the package stays"
dpkg --root="$R" --log="$work/dpkg.log" -r userns-hostnet >/dev/null 2>&1 || fail "dpkg -r: $(dpkg --root="$R" --log="$work/dpkg.log" -r userns-hostnet 2>&1)"
[ ! -e "$R/usr/bin/userns-hostnet-runtime" ] && [ ! -L "$R/usr/bin/userns-hostnet-runtime-crun" ] || fail "dpkg -r left the binaries"
[ -f "$R/etc/userns-hostnet/config.toml" ] || fail "dpkg -r removed the conffile"
dpkg --root="$R" --log="$work/dpkg.log" -P userns-hostnet >/dev/null 2>&1 || fail "dpkg -P: $(dpkg --root="$R" --log="$work/dpkg.log" -P userns-hostnet 2>&1)"
left=$(diff <(printf '%s\n' "$empty") <(files "$R") || true)
[ -z "$left" ] || fail "dpkg -r and -P left: $left"
step "dpkg -r (keeps the conffile) and dpkg -P: nothing of the package left"

R=$work/rpm-root
mkdir -p "$R/var/lib/rpm"
rpm --root "$R" --dbpath /var/lib/rpm --initdb
empty=$(files "$R")
# --nodeps: no package of the scratch root provides /bin/sh or (runc or
# crun); --ignorearch: this rpm is not an aarch64 one.
out=$(rpm --root "$R" --dbpath /var/lib/rpm -i --ignorearch --nodeps "$work/userns-hostnet.rpm" 2>&1 | grep -v '^rpm: ') || fail "rpm --root -i: $out"
grep -q 'nothing has been registered yet' <<<"$out" || fail "rpm -i: no post-install message: $out"
[ "$(rpm --root "$R" --dbpath /var/lib/rpm -q --qf '%{ARCH}' userns-hostnet)" = aarch64 ] || fail "rpm -q: $(rpm --root "$R" --dbpath /var/lib/rpm -q userns-hostnet 2>&1)"
[ "$(readlink "$R/usr/bin/userns-hostnet-runtime-crun")" = userns-hostnet-runtime ] || fail "%post made no -crun link"
rpm --root "$R" --dbpath /var/lib/rpm -V --nodeps userns-hostnet || fail "rpm -V after install"
chroot "$R" /usr/bin/userns-hostnet registrations >/dev/null || fail "registrations in the scratch root: $(chroot "$R" /usr/bin/userns-hostnet registrations 2>&1)"
step "rpm -i of the aarch64 .rpm: installed, aarch64, verified, %post's links and message; the aarch64 binaries run"
mkdir -p "$R/etc/userns-hostnet/handlers/uhn"
ln -s /usr/bin/userns-hostnet-runtime "$R/etc/userns-hostnet/handlers/uhn/userns-hostnet-runtime"
if out=$(rpm --root "$R" --dbpath /var/lib/rpm -e userns-hostnet 2>&1); then fail "rpm -e while a handler's link names the wrapper: $out"; fi
grep -q 'not removing: the runtime wrapper is still registered' <<<"$out" || fail "rpm -e while registered: $out"
rpm --root "$R" --dbpath /var/lib/rpm -q userns-hostnet >/dev/null || fail "the refused erase removed the package"
rm -r "$R/etc/userns-hostnet/handlers"
step "rpm -e while registered is refused by %preun's aarch64 userns-hostnet registrations; the package stays"
rpm --root "$R" --dbpath /var/lib/rpm -e userns-hostnet 2>/dev/null || fail "rpm -e: $(rpm --root "$R" --dbpath /var/lib/rpm -e userns-hostnet 2>&1)"
# cargo-generate-rpm 0.21 lists no directories: rpm makes the missing
# ones at install and, owning none, leaves them (empty) at erase, as it
# does on x86_64. Any file left fails.
left=$(diff <(printf '%s\n' "$empty") <(files "$R") | sed -n 's/^> //p' || true)
left_files=$(cd "$R" && for f in $left; do [ -d "$f" ] || echo "$f"; done)
[ -z "$left_files" ] || fail "rpm -e left: $left_files"
step "rpm -e: no file of the package left (rpm leaves $(wc -w <<<"$left") empty directories it never owned: $(tr '\n' ' ' <<<"$left"))"
EOF
set +e
ns=$(unshare --user --map-user=0 --map-group=0 --mount --propagation private bash "$work/in-namespace.sh" "$work" "$register" 2>&1)
rc=$?
set -e
while read -r line; do
	case $line in
	"step "*) ok "scratch root: ${line#step }" ;;
	esac
done <<<"$ns"
[ "$rc" = 0 ] || fail "the scratch roots: $(grep -v '^step ' <<<"$ns")"

# ---- the installer image
podman manifest exists "$image" 2>/dev/null || fail "$image is not an index: make image"
index=$(podman manifest inspect "$image")
platforms=$(jq -r '[.manifests[].platform | .os + "/" + .architecture] | sort | join(" ")' <<<"$index")
[ "$platforms" = "linux/amd64 linux/arm64" ] || fail "the index $image lists $platforms"
echo "     $image: $(jq -c '[.manifests[] | {digest, platform}]' <<<"$index")"
for arch in amd64 arm64; do
	case $arch in
	amd64) machine=x86-64 ;;
	arm64) machine='ARM aarch64' ;;
	esac
	t=$(./scripts/release-triple.sh "$arch")
	entry=$(jq -r --arg a "$arch" '.manifests[] | select(.platform.architecture == $a) | .digest' <<<"$index")
	[ "$(podman image inspect --format '{{.Digest}}' "$image-$arch")" = "$entry" ] || fail "the index's linux/$arch entry $entry is not $image-$arch"
	[ "$(podman image inspect --format '{{.Os}}/{{.Architecture}}' "$image-$arch")" = "linux/$arch" ] || fail "$image-$arch is not linux/$arch"
	dir=$(podman image mount "$image-$arch")
	mounted+=("$image-$arch")
	for bin in userns-hostnet userns-hostnet-runtime; do
		desc=$(file -b "$dir/usr/local/bin/$bin")
		echo "     $image-$arch /usr/local/bin/$bin: $desc"
		case $desc in
		*", $machine,"*"static"*) ;;
		*) fail "$image-$arch: /usr/local/bin/$bin is not a static $machine binary: $desc" ;;
		esac
		cmp -s "$dir/usr/local/bin/$bin" "target/$t/release/$bin" || fail "$image-$arch: /usr/local/bin/$bin is not target/$t/release/$bin"
	done
	podman image unmount "$image-$arch" >/dev/null
	ok "the index's linux/$arch entry ($entry) holds the static $machine release binaries"
done
case $host in
x86_64-*) own=amd64 ;;
aarch64-*) own=arm64 ;;
esac
[ "$(podman image inspect --format '{{.Architecture}}' "$image")" = "$own" ] || fail "$image resolves to $(podman image inspect --format '{{.Architecture}}' "$image") here, not $own"
for bin in userns-hostnet userns-hostnet-runtime; do
	cmp -s "target/image/$bin" "target/$(./scripts/release-triple.sh)/release/$bin" || fail "target/image/$bin (the tests' build context) is not this machine's release binary"
done
ok "$image resolves to linux/$own here (podman save, run) and target/image holds this machine's binaries, as before the index"
