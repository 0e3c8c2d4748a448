#!/usr/bin/env bash
# Checks the built packages (make package first) the way a distro would:
# contents against the lists kept here, lintian, then the .deb installed on
# this machine: doctor from /usr/bin, a real userns + host-network container
# through /usr/bin/userns-hostnet-runtime, an edited conffile surviving a
# reinstall, remove and purge. Needs root, dpkg, lintian and rpm.
set -euo pipefail

cd "$(dirname "$0")/.."
here=packaging
# make package builds for the host's target triple (static binaries, see the Makefile).
out=target/$(rustc -vV | sed -n 's/^host: //p')
deb=$(ls "$out"/debian/userns-hostnet_*.deb)
rpm=$(ls "$out"/generate-rpm/userns-hostnet-*.rpm)
passed=0
ok() { passed=$((passed + 1)); echo "ok   $*"; }
fail() { echo "FAIL $*" >&2; exit 1; }
same() { # what expected-file actual-text
	diff -u --label "expected $1" --label "actual $1" "$2" <(printf '%s\n' "$3") || fail "$1 differs from $2"
	ok "$1 matches $2"
}

[ "$(id -u)" = 0 ] || fail "run as root: the .deb is installed on this machine"

same "deb contents" "$here/expected-deb-contents.txt" \
	"$(dpkg-deb --contents "$deb" | awk '{ t = substr($1, 1, 1); p = $6; if (t == "l") p = p " -> " $8; print t, p }' | sort)"
info=$(dpkg-deb --info "$deb")
grep -q '^ Depends: .*runc | crun' <<<"$info" || fail "Depends lacks 'runc | crun': $info"
ok "Depends: runc | crun"
same "deb conffiles" "$here/expected-rpm-configfiles.txt" "$(dpkg-deb --info "$deb" conffiles | sort)"

# The synopsis is one whole line (a wrapped description used to leave
# half a sentence as the synopsis); the long description follows it.
summary=$(sed -n 's/^description = "\(.*\)"$/\1/p' Cargo.toml)
desc=$(dpkg-deb -f "$deb" Description)
[ "$(head -1 <<<"$desc")" = "$summary" ] || fail "deb synopsis is not the package description: $desc"
sed -n 2p <<<"$desc" | grep -q '^ A runc-compatible wrapper' || fail "deb long description missing: $desc"
[ "${#summary}" -le 80 ] || fail "synopsis longer than 80 characters: $summary"
homepage=$(sed -n 's/^homepage = "\(.*\)"$/\1/p' Cargo.toml)
[ -n "$homepage" ] && [ "$(dpkg-deb -f "$deb" Homepage)" = "$homepage" ] || fail "deb Homepage is not $homepage"
ok "deb synopsis, long description and homepage"

# Every page a man page names exists in the package, and every page has
# the sections an operator looks for.
man_tree=$(mktemp -d)
dpkg-deb -x "$deb" "$man_tree"
for page in "$man_tree"/usr/share/man/man1/*.1.gz; do
	[ -L "$page" ] && continue
	text=$(zcat "$page")
	for section in FILES ENVIRONMENT '"EXIT STATUS"' EXAMPLES; do
		grep -q "^\.SH $section\$" <<<"$text" || fail "$(basename "$page") has no $section section"
	done
	for ref in $(grep -oE 'userns(\\-|-)hostnet((\\-|-)[a-z]+)* ?\(1\)' <<<"$text" | sed 's/\\-/-/g; s/ //g; s/(1)//' | sort -u); do
		[ -e "$man_tree/usr/share/man/man1/$ref.1.gz" ] || fail "$(basename "$page") names $ref(1), which the package lacks"
	done
done
rm -rf "$man_tree"
ok "every man page has FILES, ENVIRONMENT, EXIT STATUS, EXAMPLES and names only pages the package has"

lint=$(lintian "$deb" 2>&1 || true)
if grep -q '^E:' <<<"$lint"; then fail "lintian errors:
$lint"; fi
ok "lintian: no errors ($(grep -c '^W:' <<<"$lint" || true) warnings)"

same "rpm contents" "$here/expected-rpm-contents.txt" "$(rpm -qlp "$rpm" 2>/dev/null | sort)"
same "rpm config files" "$here/expected-rpm-configfiles.txt" "$(rpm -qp --configfiles "$rpm" 2>/dev/null | sort)"
[ "$(rpm -qp --qf '%{URL}' "$rpm" 2>/dev/null)" = "$homepage" ] || fail "rpm URL is not $homepage"
[ "$(rpm -qp --qf '%{SUMMARY}' "$rpm" 2>/dev/null)" = "$summary" ] || fail "rpm summary is not the package description"
ok "rpm URL and summary"
rpm -qp --requires "$rpm" 2>/dev/null | grep -qx '(runc or crun)' || fail "rpm does not require (runc or crun)"
ok "rpm requires (runc or crun)"

# Install on this machine; leave nothing behind.
cleanup() { dpkg -P userns-hostnet >/dev/null 2>&1 || true; }
trap cleanup EXIT
cleanup
out=$(dpkg -i "$deb" 2>&1) || fail "dpkg -i: $out"
grep -q 'nothing has been registered yet' <<<"$out" || fail "post-install message missing: $out"
ok "dpkg -i (post-install message says nothing was registered)"
# The hook can refuse containers: the package ships it where no daemon
# reads hooks, and the message says how to turn it on.
for d in /usr/share/containers/oci/hooks.d /etc/containers/oci/hooks.d; do
	[ ! -e "$d/userns-hostnet.json" ] || fail "the package enabled the hook in $d"
done
[ -f /usr/share/userns-hostnet/hooks.d/userns-hostnet.json ] || fail "hook definition not shipped"
grep -q 'ln -s /usr/share/userns-hostnet/hooks.d/userns-hostnet.json' <<<"$out" || fail "post-install message does not say how to enable the hook: $out"
ok "the createRuntime hook is shipped, not enabled"

set +e
doctor=$(/usr/bin/userns-hostnet doctor 2>&1)
rc=$?
set -e
[ "$rc" -le 1 ] && grep -q 'kernel.mount_setattr' <<<"$doctor" || fail "doctor from /usr/bin (exit $rc): $doctor"
ok "userns-hostnet doctor runs from /usr/bin (exit $rc)"

# Static-pie: no program interpreter, no shared library needed.
for bin in /usr/bin/userns-hostnet-runtime /usr/bin/userns-hostnet; do
	if readelf -lW "$bin" | grep -q 'INTERP' || readelf -dW "$bin" | grep -q '(NEEDED)'; then
		fail "$bin is dynamically linked: $(readelf -dW "$bin" | grep '(NEEDED)')"
	fi
done
ok "the installed binaries are static (no interpreter, no NEEDED)"

[ "$(readlink /usr/bin/userns-hostnet-runtime-crun)" = userns-hostnet-runtime ] || fail "crun name is not a link"
/usr/bin/userns-hostnet-runtime-crun --version | grep -q '^crun version' || fail "userns-hostnet-runtime-crun does not run crun"
ok "userns-hostnet-runtime-crun runs crun"

[ "$(readlink /usr/bin/userns-hostnet-runtime-youki)" = userns-hostnet-runtime ] || fail "youki name is not a link"
set +e
youki_out=$(/usr/bin/userns-hostnet-runtime-youki --version 2>&1)
set -e
if command -v youki >/dev/null; then
	grep -q '^youki version' <<<"$youki_out" || fail "userns-hostnet-runtime-youki does not run youki: $youki_out"
	ok "userns-hostnet-runtime-youki runs youki"
else
	grep -q 'runtime youki, named by this wrapper.s file name, is not an executable in PATH' <<<"$youki_out" ||
		fail "userns-hostnet-runtime-youki without youki: $youki_out"
	ok "userns-hostnet-runtime-youki names the missing youki"
fi

demo=$(./scripts/demo.sh /usr/bin/userns-hostnet-runtime 2>&1) || fail "container through the installed wrapper: $demo"
grep -q 'every mount at or under /sys is read-only' <<<"$demo" || fail "installed wrapper left /sys writable: $demo"
grep -q 'CAP_NET_RAW *dropped' <<<"$demo" || fail "installed wrapper kept CAP_NET_RAW: $demo"
ok "a userns + host-network container runs through /usr/bin/userns-hostnet-runtime, /sys read-only"

conf=/etc/userns-hostnet/config.toml
printf '\n[capabilities]\nnet = "keep"\n' >>"$conf"
edited=$(sha256sum "$conf")
out=$(dpkg -i "$deb" 2>&1 </dev/null) || fail "reinstall: $out"
[ "$(sha256sum "$conf")" = "$edited" ] || fail "reinstall overwrote the edited $conf"
ok "an edited config.toml survives a reinstall"

dpkg -r userns-hostnet >/dev/null
for f in /usr/bin/userns-hostnet /usr/bin/userns-hostnet-runtime /usr/bin/userns-hostnet-runtime-crun /usr/bin/userns-hostnet-runtime-youki \
	/usr/share/userns-hostnet/hooks.d/userns-hostnet.json; do
	[ ! -e "$f" ] && [ ! -L "$f" ] || fail "dpkg -r left $f"
done
[ -f "$conf" ] || fail "dpkg -r removed the conffile"
ok "dpkg -r removes binaries and hook, keeps the config"
[ -e /var/log/userns-hostnet.log ] || fail "the container run left no decision log to purge"
dpkg -P userns-hostnet >/dev/null
[ ! -e "$conf" ] || fail "dpkg -P left $conf"
for f in /var/log/userns-hostnet.log /run/userns-hostnet; do
	[ ! -e "$f" ] || fail "dpkg -P left $f"
done
ok "dpkg -P removes the config, the decision log and /run/userns-hostnet"

echo "packages: $passed passed, 0 failed"
