#!/usr/bin/env bash
# Seed the fuzz corpora from the real configs in crates/engine/fixtures and
# the argv in tests/fixtures:
#   fuzz/seed.sh            then   RUSTC_BOOTSTRAP=1 cargo fuzz run engine
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p corpus/engine corpus/argv
cp ../crates/engine/fixtures/*.json corpus/engine/
for f in ../tests/fixtures/*.argv; do
	# One NUL between words, as the kernel hands argv over.
	tr -s ' \n' '\0\0' <"$f" | sed 's/\x00$//' >"corpus/argv/$(basename "$f")"
done
printf 'create\0--bundle' >corpus/argv/bundle-last
printf -- '--root\0/r\0--log=/l\0--log-format\0json\0run\0-b=/b\0--\0id' >corpus/argv/separator
