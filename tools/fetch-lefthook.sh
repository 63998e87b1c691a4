#!/bin/sh
# Fetches two real, modern Go binaries (lefthook 2.2.2, built with Go 1.27, no DWARF and no
# symbol table) used by the symbolizer tests as "stripped, newest format" specimens.
# Usage: tools/fetch-lefthook.sh [DEST_DIR]   (default: .cache/lefthook under the repo)
# Cached: does nothing when both binaries already exist. Uses `npm pack`, the registry's
# ordinary client, so no host name is written here.
set -eu

VERSION=2.2.2
repo_root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-"$repo_root/.cache/lefthook"}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

for arch in x64 arm64; do
  out="$dest/lefthook-linux-$arch"
  if [ -x "$out" ]; then
    continue
  fi
  work=$(mktemp -d "$dest/.fetch.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm pack --silent "lefthook-linux-$arch@$VERSION" >/dev/null)
  tarball=$(ls "$work"/*.tgz | head -n 1)
  mkdir "$work/x"
  tar -xzf "$tarball" -C "$work/x"
  # The package layout is package/bin/lefthook; search rather than hard-code it.
  bin=$(find "$work/x" -type f -name lefthook | head -n 1)
  if [ -z "$bin" ]; then
    echo "fetch-lefthook: no lefthook binary inside $tarball" >&2
    exit 1
  fi
  chmod +x "$bin"
  mv "$bin" "$out.tmp.$$"
  mv "$out.tmp.$$" "$out"
  rm -rf "$work"
  trap - EXIT
done
echo "$dest"
