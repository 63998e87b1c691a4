#!/bin/sh
# Writes one man page from `switchback [WORDS...] --help` with help2man, so that the page is the
# --help text of the binary just built and cannot drift from it.
#   help2man-page.sh SWITCHBACK OUT.8 NAME VERSION [INCLUDE...] -- [WORDS...]
# NAME is the page's one-line description, VERSION the project version (given rather than read
# from --version, whose kernel facts belong to the build machine, not to the page).
# Also writes OUT.8.gz (gzip -n: no timestamp), the form Debian ships.
set -eu
bin=$1 out=$2 name=$3 version=$4
shift 4
includes=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  includes="$includes --include=$1"
  shift
done
[ $# -gt 0 ] && shift
# In the sanitizer build a leak report at exit would fail help2man; --help's leaks (none known)
# are the fuzzers' and tests' business, not the man pages'.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# help2man names the page after the program it runs: a wrapper called switchback-record that
# runs `switchback record`.
page=$(basename "$out" .8)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
{
  printf '#!/bin/sh\nexec "%s"' "$bin"
  for w in "$@"; do printf ' %s' "$w"; done
  printf ' "$@"\n'
} > "$dir/$page"
chmod +x "$dir/$page"
# The version string names the page (switchback-record), the source its footer (switchback 0.1.0).
# shellcheck disable=SC2086  # one --include=FILE per word
help2man --no-info --section 8 --name "$name" --version-string "$page $version" --source "switchback $version" \
  --manual "System Administration Utilities" $includes --output "$out.tmp" "$dir/$page"
mv "$out.tmp" "$out"
gzip -9 -n -c "$out" > "$out.gz"
