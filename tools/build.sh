#!/usr/bin/env bash
# Installs the dependencies (Debian 12, as root) and builds switchback into ${BUILD_DIR:-build}:
# everything, or only BUILD_TARGETS (ninja targets, e.g. "switchback testdata/demo").
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
BUILD_DIR=${BUILD_DIR:-build}
# ccache (when present) makes rebuilds and other checkouts of the same sources cheap.
# Paths are made relative to the checkout and the working directory is left out of the hash
# (ccache hashes it when compiling with -g), so another checkout of the same sources (a CI
# clone, a worktree) hits the cache too.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
fi
# ninja 1.11 (Debian 12) compares mtimes only: a source that changes while its dependents compile
# (a git merge or checkout during a build) leaves objects of the old source that are newer than
# the new one, and they are never rebuilt: an object compiled against a struct's old layout,
# linked with one compiled against the new, fails at run time (an ASan stack-buffer-overflow,
# seen with agent_endpoint_test.cc.o and pprof_reader.cc.o). So sources changed during the build
# are touched after it and built again.
stamp=$(mktemp)
trap 'rm -f "$stamp"' EXIT
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" "$@" >/dev/null
ninja -C "$BUILD_DIR" -j"$(nproc)" ${BUILD_TARGETS:-}
mapfile -d '' changed < <(git ls-files -z 2>/dev/null | xargs -0 -r sh -c 'find "$@" -maxdepth 0 -newer "$0" -print0 2>/dev/null' "$stamp")
if [ ${#changed[@]} -gt 0 ]; then
  echo "build.sh: ${#changed[@]} source(s) changed during the build (${changed[0]}...): building what depends on them again" >&2
  touch -- "${changed[@]}"
  ninja -C "$BUILD_DIR" -j"$(nproc)" ${BUILD_TARGETS:-}
fi
