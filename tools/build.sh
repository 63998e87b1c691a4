#!/usr/bin/env bash
# Installs the dependencies (Debian 12, as root) and builds switchback into ${BUILD_DIR:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
ninja -C "$BUILD_DIR" -j"$(nproc)"
