#!/usr/bin/env bash
# Unpacks one package of Debian trixie into a directory, for a tool the
# machine's own release has too old (containerd 1.7.24, etcd 3.5.16):
#   trixie-deb.sh PACKAGE VERSION WORKDIR DEST [PATH...]
# The .deb is downloaded into WORKDIR with a private APT_CONFIG whose only
# source is trixie (the system's sources stay as they are), then unpacked
# with dpkg -x into DEST (only the PATHs of the package, such as
# ./usr/bin/qemu-aarch64, when given), which records VERSION in
# DEST/.version. Nothing is done when DEST already holds VERSION; a .deb
# already in WORKDIR is reused.
set -euo pipefail

[ $# -ge 4 ] || {
	echo "usage: trixie-deb.sh PACKAGE VERSION WORKDIR DEST [PATH...]" >&2
	exit 2
}
package=$1 version=$2 work=$3 dest=$4
shift 4

if [ -d "$dest" ] && [ "$(cat "$dest/.version" 2>/dev/null)" = "$version" ]; then
	exit 0
fi
A=$work/apt
mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$A/etc"
uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
uri=${uri:-http://deb.debian.org/debian}
printf 'Types: deb\nURIs: %s\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
	"$uri" >"$A/etc/trixie.sources"
printf 'Dir::Etc::sourcelist "/dev/null";\nDir::Etc::sourceparts "%s/etc";\nDir::State::Lists "%s/lists";\nDir::Cache "%s/cache";\n' \
	"$A" "$A" "$A" >"$A/apt.conf"
# The file name escapes the epoch's colon (1%3a): the upstream version,
# without epoch and revision, is enough.
upstream=${version#*:}
upstream=${upstream%%-*}
deb=$(ls "$work/${package}_"*"$upstream"*.deb 2>/dev/null | sed -n 1p || true)
if [ -z "$deb" ]; then
	APT_CONFIG=$A/apt.conf apt-get update -q
	if ! (cd "$work" && APT_CONFIG=$A/apt.conf apt-get download "$package=$version"); then
		echo "trixie-deb.sh: $package=$version is not in trixie any more (a point release replaced it): update the pinned version" >&2
		exit 1
	fi
	deb=$(ls "$work/${package}_"*"$upstream"*.deb | sed -n 1p)
fi
rm -rf "$dest.tmp"
if [ $# -gt 0 ]; then
	mkdir -p "$dest.tmp"
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dest.tmp" "$@"
else
	dpkg -x "$deb" "$dest.tmp"
fi
echo "$version" >"$dest.tmp/.version"
rm -rf "$dest"
mv "$dest.tmp" "$dest"
