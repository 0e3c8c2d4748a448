#!/usr/bin/env bash
# Checks the built packages (make package first) the way a distro would:
# contents against the lists kept here, lintian, then the .deb installed on
# this machine: doctor from /usr/bin, a real userns + host-network container
# through /usr/bin/userns-hostnet-runtime, an edited conffile surviving a
# reinstall, remove and purge; then the upgrade from the previous version's
# .deb (make deb-previous) with a container of the handler running. Needs
# root, dpkg, lintian, rpm, containerd and jq.
set -euo pipefail

cd "$(dirname "$0")/.."
here=packaging
# make package builds for this machine's release triple (static binaries, see the Makefile).
out=target/$(./scripts/release-triple.sh)
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
prev_debs=(target/previous/deb/userns-hostnet_*.deb)
[ "${#prev_debs[@]}" = 1 ] && [ -f "${prev_debs[0]}" ] ||
	fail "target/previous/deb holds no single .deb of the previous version (${prev_debs[*]}): run make deb-previous (make package-check does)"
prev_deb=${prev_debs[0]}

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
sed -n 2p <<<"$desc" | grep '^ A runc-compatible wrapper' >/dev/null || fail "deb long description missing: $desc"
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
rpm -qp --requires "$rpm" 2>/dev/null | grep -x '(runc or crun)' >/dev/null || fail "rpm does not require (runc or crun)"
ok "rpm requires (runc or crun)"

# rpm: the erase is refused while registered, an upgrade never is (%preun's $1).
rpm -qp --scripts "$rpm" 2>/dev/null | grep '^preuninstall scriptlet' >/dev/null || fail "rpm has no %preun"
preun=$(rpm -qp --qf '%{PREUN}' "$rpm" 2>/dev/null)
grep -q 'userns-hostnet registrations' <<<"$preun" || fail "rpm %preun does not ask for registrations: $preun"
ok "rpm %preun asks userns-hostnet registrations"

# Install on this machine; leave nothing behind.
reg=$(mktemp -d /tmp/uhn-pkg-reg.XXXXXX)
handler=uhn-pkg-check-$$
ctr_id=uhn-pkg-check-$$
up_id=uhn-pkg-upgrade-$$
ctrd_pid=
stop_containerd() {
	if [ -n "$ctrd_pid" ]; then
		kill "$ctrd_pid" 2>/dev/null || true
		wait "$ctrd_pid" 2>/dev/null || true
		ctrd_pid=
	fi
}
cleanup() {
	if [ -n "$ctrd_pid" ]; then
		for id in "$ctr_id" "$up_id"; do
			ctr -a "$reg/c.sock" task kill -s KILL "$id" >/dev/null 2>&1 || true
		done
		sleep 1
		for id in "$ctr_id" "$up_id"; do
			ctr -a "$reg/c.sock" task delete "$id" >/dev/null 2>&1 || true
			ctr -a "$reg/c.sock" container delete "$id" >/dev/null 2>&1 || true
		done
	fi
	stop_containerd
	[ -x /usr/bin/userns-hostnet ] && /usr/bin/userns-hostnet uninstall containerd --config "$reg/config.toml" --handler "$handler" --handlers-dir /etc/userns-hostnet/handlers >/dev/null 2>&1 || true
	umount "$reg/state"/io.containerd.runtime.v2.task/*/*/rootfs >/dev/null 2>&1 || true
	rm -rf "$reg"
	dpkg -P userns-hostnet >/dev/null 2>&1 || true
}
trap cleanup EXIT
cleanup
mkdir -p "$reg"
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
	if readelf -lW "$bin" | grep 'INTERP' >/dev/null || readelf -dW "$bin" | grep '(NEEDED)' >/dev/null; then
		fail "$bin is dynamically linked: $(readelf -dW "$bin" | grep '(NEEDED)')"
	fi
done
ok "the installed binaries are static (no interpreter, no NEEDED)"

[ "$(readlink /usr/bin/userns-hostnet-runtime-crun)" = userns-hostnet-runtime ] || fail "crun name is not a link"
/usr/bin/userns-hostnet-runtime-crun --version | grep '^crun version' >/dev/null || fail "userns-hostnet-runtime-crun does not run crun"
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

# Registered with a containerd (private config, root, state and socket;
# its runc handler names its runc, so install makes the handler's links),
# with a container of the handler running: removal is refused with the
# command to run first, the package stays whole, the daemon still starts
# on its config and the container can be stopped and deleted. An upgrade
# (dpkg -i of the same package) is not refused.
write_config() {
	containerd config default |
		sed -e "s#^root = .*#root = \"$reg/root\"#" -e "s#^state = .*#state = \"$reg/state\"#" \
			-e "s#\"/run/containerd/containerd.sock\"#\"$reg/c.sock\"#" \
			-e "s#^disabled_plugins = .*#disabled_plugins = [\"io.containerd.grpc.v1.cri\"]#" \
			-e "s#BinaryName = \"\"#BinaryName = \"$(command -v runc)\"#" >"$reg/config.toml"
}
write_config
# The config is a private copy for the test, so the links of this node are named explicitly (install refuses host links for a copy otherwise).
out=$(/usr/bin/userns-hostnet install containerd --config "$reg/config.toml" --handler "$handler" --handlers-dir /etc/userns-hostnet/handlers 2>&1) || fail "install: $out"
links=/etc/userns-hostnet/handlers/$handler
[ "$(readlink "$links/userns-hostnet-runtime")" = /usr/bin/userns-hostnet-runtime ] || fail "install made no handler link: $out"
registered=$(/usr/bin/userns-hostnet registrations) && fail "registrations found nothing after install"
grep -q -- "--handler $handler" <<<"$registered" || fail "registrations: $registered"
ok "userns-hostnet registrations lists the handler: $registered"
start_containerd() {
	containerd --config "$reg/config.toml" >>"$reg/containerd.log" 2>&1 &
	ctrd_pid=$!
	for _ in $(seq 100); do
		ctr -a "$reg/c.sock" version >/dev/null 2>&1 && return 0
		kill -0 "$ctrd_pid" 2>/dev/null || fail "containerd did not start on $reg/config.toml: $(tail -20 "$reg/containerd.log")"
		sleep 0.1
	done
	fail "containerd never answered on $reg/c.sock"
}
# Kills the container ID and deletes its task and the container, each
# through the handler's wrapper.
stop_and_delete() {
	ctr -a "$reg/c.sock" task kill -s KILL "$1" >/dev/null || fail "task kill of $1 through the wrapper"
	for _ in $(seq 50); do
		ctr -a "$reg/c.sock" task ls | grep "^$1 .*STOPPED" >/dev/null && break
		sleep 0.1
	done
	ctr -a "$reg/c.sock" task delete "$1" >/dev/null || fail "task delete of $1 through the wrapper"
	ctr -a "$reg/c.sock" container delete "$1" >/dev/null || fail "container delete of $1"
}
start_containerd
mkdir -p "$reg/rootfs/bin"
cp "$(command -v busybox)" "$reg/rootfs/bin/busybox"
out=$(ctr -a "$reg/c.sock" run -d --runtime io.containerd.runc.v2 \
	--runc-binary "$links/userns-hostnet-runtime" --rootfs "$reg/rootfs" "$ctr_id" /bin/busybox sleep 600 2>&1) || fail "ctr run through the handler: $out"
ctr -a "$reg/c.sock" task ls | grep "^$ctr_id .*RUNNING" >/dev/null || fail "the container does not run: $(ctr -a "$reg/c.sock" task ls)"
ok "a container runs through the handler's link to /usr/bin/userns-hostnet-runtime"

set +e
removal=$(DEBIAN_FRONTEND=noninteractive apt-get remove -y userns-hostnet 2>&1)
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "apt-get remove succeeded while registered: $removal"
grep -q 'userns-hostnet: not removing: the runtime wrapper is still registered' <<<"$removal" || fail "apt-get remove: no refusal message: $removal"
grep -q -- "userns-hostnet uninstall containerd --handler $handler" <<<"$removal" || fail "apt-get remove: the refusal lacks the command: $removal"
echo "$removal" | grep -A3 'not removing' | sed 's/^/     /'
ok "apt-get remove is refused while registered, naming the command (exit $rc)"
set +e
removal=$(dpkg -r userns-hostnet 2>&1)
rc=$?
set -e
[ "$rc" -ne 0 ] && grep -q -- "--handler $handler" <<<"$removal" || fail "dpkg -r while registered (exit $rc): $removal"
ok "dpkg -r is refused while registered"
# dpkg keeps the wish (deinstall) and the state (installed).
[ "$(dpkg-query -W -f '${db:Status-Status}' userns-hostnet)" = installed ] || fail "after the refusal: $(dpkg-query -W -f '${Status}' userns-hostnet)"
[ -x /usr/bin/userns-hostnet-runtime ] && [ -L /usr/bin/userns-hostnet-runtime-crun ] || fail "a refused removal deleted files"
ok "after the refusal the package is installed and whole"

set +e
preun_rc=$(sh -c "$preun" preun 0 >/dev/null 2>&1; echo $?)
upgrade_rc=$(sh -c "$preun" preun 1 >/dev/null 2>&1; echo $?)
set -e
[ "$preun_rc" = 1 ] && [ "$upgrade_rc" = 0 ] || fail "rpm %preun while registered: erase exit $preun_rc (want 1), upgrade exit $upgrade_rc (want 0)"
ok "rpm %preun while registered: erase refused, upgrade allowed"

out=$(dpkg -i "$deb" 2>&1 </dev/null) || fail "upgrade while registered: $out"
ok "an upgrade (dpkg -i over the installed package) is not refused while registered"

stop_containerd
start_containerd
ok "containerd starts again on the registered config"
stop_and_delete "$ctr_id"
ok "the running container is stopped and deleted through the wrapper"
stop_containerd

out=$(/usr/bin/userns-hostnet uninstall containerd --config "$reg/config.toml" --handler "$handler" --handlers-dir /etc/userns-hostnet/handlers 2>&1) || fail "uninstall: $out"
/usr/bin/userns-hostnet registrations >/dev/null || fail "registrations after uninstall: $(/usr/bin/userns-hostnet registrations)"
ok "after uninstall nothing is registered"

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
for f in /etc/userns-hostnet /usr/share/userns-hostnet; do
	[ ! -e "$f" ] || fail "dpkg -P after uninstall left $f: $(find "$f")"
done
ok "dpkg -P removes the config, the decision log and /run/userns-hostnet; nothing of the package is left"

# The upgrade an operator makes: the previous version's package installed
# and registered, a container of the handler running that its wrapper
# converted, then this package installed over it. The container must keep
# running untouched, and what the previous wrapper recorded at create
# must be read by this one: an exec after the upgrade goes through the new
# binary and must be hardened as before, and the container is stopped and
# deleted through it.
prev_version=$(dpkg-deb -f "$prev_deb" Version)
version=$(dpkg-deb -f "$deb" Version)
dpkg --compare-versions "$prev_version" lt "$version" ||
	fail "the previous version's package $prev_deb is $prev_version, not below $version: dpkg -i of this one would not be an upgrade"
out=$(dpkg -i "$prev_deb" 2>&1 </dev/null) || fail "dpkg -i $prev_deb: $out"
commit_of() { /usr/bin/userns-hostnet version | sed -n 's/^commit: *//p'; }
prev_commit=$(commit_of)
ok "the previous version's package is installed: $prev_version (commit $prev_commit)"

write_config
out=$(/usr/bin/userns-hostnet install containerd --config "$reg/config.toml" --handler "$handler" --handlers-dir /etc/userns-hostnet/handlers 2>&1) ||
	fail "install by the previous version: $out"
[ "$(readlink "$links/userns-hostnet-runtime")" = /usr/bin/userns-hostnet-runtime ] || fail "the previous version's install made no handler link: $out"
start_containerd
# A container the wrapper converts: its own user namespace (0 -> host
# 100000), the host's network namespace. ctr 1.6 given --uidmap sends task
# options of its own, without --runc-binary's name, and the shim then runs
# plain runc: so the spec is containerd's default (ctr oci spec) with what
# --uidmap and --net-host change in it, run with --config. The container's
# root (host uid 100000) reaches its rootfs through $reg.
mkdir -p "$reg/rootfs-userns/bin"
cp "$(command -v busybox)" "$reg/rootfs-userns/bin/busybox"
chown -R -h 100000:100000 "$reg/rootfs-userns"
chmod 711 "$reg"
ctr -a "$reg/c.sock" oci spec | jq --arg root "$reg/rootfs-userns" --arg cgroup "/default/$up_id" '
	.root.path = $root
	| .process.args = ["/bin/busybox", "sleep", "600"]
	| .linux.cgroupsPath = $cgroup
	| .linux.namespaces = ([.linux.namespaces[] | select(.type != "network")] + [{type: "user"}])
	| .linux.uidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
	| .linux.gidMappings = [{containerID: 0, hostID: 100000, size: 65536}]' >"$reg/userns-spec.json"
out=$(ctr -a "$reg/c.sock" run -d --runtime io.containerd.runc.v2 --runc-binary "$links/userns-hostnet-runtime" \
	--config "$reg/userns-spec.json" "$up_id" 2>&1) || fail "ctr run of a userns + host-network container through the previous version's handler: $out"
# The task's init: pid, status, start time (a restarted container has
# another pid or start time).
init_of() {
	local pid status
	read -r pid status < <(ctr -a "$reg/c.sock" task ls | awk -v id="$up_id" '$1 == id { print $2, $3 }')
	[ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || fail "no task $up_id: $(ctr -a "$reg/c.sock" task ls)"
	echo "$pid $status $(sed 's/.*) //' "/proc/$pid/stat" | cut -d' ' -f20)"
}
# What a process exec'd into the container sees (the exec goes through
# the handler's wrapper), into $seen: its bounding set must lack the
# network capabilities the wrapper drops (docs/runtime.md:
# CAP_NET_BIND_SERVICE 10, CAP_NET_BROADCAST 11, CAP_NET_ADMIN 12,
# CAP_NET_RAW 13), and every mount at or under /sys must be read-only.
hardened() { # exec-id
	local status mounts sys rw capbnd bit
	status=$(ctr -a "$reg/c.sock" task exec --exec-id "$1-status" "$up_id" /bin/busybox cat /proc/self/status 2>&1) || fail "exec $1: $status"
	capbnd=$(awk '/^CapBnd:/ { print $2 }' <<<"$status")
	[ -n "$capbnd" ] || fail "exec $1: no CapBnd: $status"
	for bit in 10 11 12 13; do
		if (((16#$capbnd >> bit) & 1)); then
			fail "exec $1: CapBnd $capbnd holds capability $bit, a network capability the wrapper drops: $(grep ^Cap <<<"$status")"
		fi
	done
	mounts=$(ctr -a "$reg/c.sock" task exec --exec-id "$1-mounts" "$up_id" /bin/busybox cat /proc/self/mountinfo 2>&1) || fail "exec $1: $mounts"
	sys=$(awk '$5 ~ /^\/sys(\/|$)/' <<<"$mounts")
	[ -n "$sys" ] || fail "exec $1: nothing mounted at /sys: $mounts"
	rw=$(awk '$6 !~ /(^|,)ro(,|$)/' <<<"$sys")
	[ -z "$rw" ] || fail "exec $1: writable at or under /sys:
$rw"
	seen="CapBnd $capbnd, $(wc -l <<<"$sys") mounts at or under /sys, all read-only"
}
before=$(init_of)
[ "$(cut -d' ' -f2 <<<"$before")" = RUNNING ] || fail "the container does not run: $before"
pid=${before%% *}
grep -F "\"id\":\"$up_id\"" /var/log/userns-hostnet.log | grep -F '"outcome":"converted"' >/dev/null ||
	fail "the previous version's wrapper did not log $up_id as converted: $(grep -F "$up_id" /var/log/userns-hostnet.log)"
record=/run/userns-hostnet/converted/init/$pid
grep -qx "id $(printf '%s' "$up_id" | od -An -tx1 | tr -d ' \n')" "$record" 2>/dev/null ||
	fail "the previous version's wrapper recorded no conversion of $up_id at $record: $(ls -R /run/userns-hostnet/converted 2>&1)"
hardened before
seen_before=$seen
ok "the previous version's wrapper converted a userns + host-network container of the handler (pid $pid, $record): an exec sees $seen"

cp "$reg/config.toml" "$reg/config.before-upgrade"
config_sum=$(sha256sum <"$reg/config.toml")
out=$(dpkg -i "$deb" 2>&1 </dev/null) || fail "upgrade from $prev_version with a container of the handler running: $out"
[ "$(dpkg-query -W -f '${Version}' userns-hostnet)" = "$version" ] || fail "after the upgrade: $(dpkg-query -W -f '${Version} ${Status}' userns-hostnet)"
for bin in userns-hostnet userns-hostnet-runtime; do
	dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/bin/$bin" | cmp -s - "/usr/bin/$bin" || fail "after the upgrade /usr/bin/$bin is not this package's"
done
if grep -q 'nothing has been registered yet' <<<"$out"; then fail "the upgrade's message says nothing is registered, with a handler registered: $out"; fi
ok "dpkg -i upgrades $prev_version (commit $prev_commit) to $version (commit $(commit_of)) with a container of the handler running"
after=$(init_of)
[ "$after" = "$before" ] || fail "the upgrade touched the container: pid, status, start time were $before, are $after"
ok "the container runs on across the upgrade (pid, status, start time: $after)"
[ "$(sha256sum <"$reg/config.toml")" = "$config_sum" ] ||
	fail "the upgrade changed containerd's config: $(diff -u "$reg/config.before-upgrade" "$reg/config.toml")"
[ "$(readlink "$links/userns-hostnet-runtime")" = /usr/bin/userns-hostnet-runtime ] || fail "the upgrade changed the handler's link: $(ls -l "$links")"
ok "the upgrade leaves containerd's config (sha256 ${config_sum%% *}) and the handler's link as they were"
hardened after
[ "$seen" = "$seen_before" ] || fail "an exec after the upgrade sees $seen, before it $seen_before"
ok "an exec after the upgrade, through this version's wrapper and the previous version's record, sees the same: $seen"

stop_and_delete "$up_id"
[ ! -e "$record" ] || fail "the delete left the previous version's record $record: $(cat "$record")"
ok "the container is stopped and deleted through the upgraded wrapper, which removed the previous version's record"
stop_containerd
start_containerd
ok "containerd starts again on its config after the upgrade"
stop_containerd

out=$(/usr/bin/userns-hostnet uninstall containerd --config "$reg/config.toml" --handler "$handler" --handlers-dir /etc/userns-hostnet/handlers 2>&1) || fail "uninstall after the upgrade: $out"
dpkg -P userns-hostnet >/dev/null || fail "dpkg -P after the upgrade"
for f in /etc/userns-hostnet /usr/share/userns-hostnet /usr/bin/userns-hostnet-runtime /run/userns-hostnet; do
	[ ! -e "$f" ] || fail "uninstall and dpkg -P after the upgrade left $f"
done
ok "after the upgrade, uninstall then dpkg -P leave nothing of the package"

echo "packages: $passed passed, 0 failed"
