#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine, as root: install, build, run every test
# (unit, BPF integration, fuzz-corpus regression). BPF tests need root and a BTF kernel; when
# they cannot run they say so in their skip message.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
tools/build.sh
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf 2>/dev/null || true
cd "$BUILD_DIR"
ctest --output-on-failure --timeout 600 -j1 "$@"
