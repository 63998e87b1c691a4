#!/usr/bin/env bash
# Installs the dependencies (Debian 12, as root) and builds switchback into ${BUILD_DIR:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
BUILD_DIR=${BUILD_DIR:-build}
# ccache (when present) makes rebuilds and other checkouts of the same sources cheap.
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" "$@" >/dev/null
ninja -C "$BUILD_DIR" -j"$(nproc)"
