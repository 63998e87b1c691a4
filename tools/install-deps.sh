#!/usr/bin/env bash
# Installs everything switchback needs to build and test on a fresh Debian 12, as root.
# Idempotent: packages already present are skipped by apt. Newer Go toolchains are not
# installed here (see tools/fetch-go.sh: they go into a cache, never system-wide).
set -euo pipefail
if [ "$(id -u)" != 0 ]; then echo "install-deps: run as root (apt-get install)" >&2; exit 1; fi
pkgs=(
  build-essential cmake ninja-build pkg-config git
  clang-14 llvm-14 libclang-rt-14-dev           # BPF target, libFuzzer and sanitizers
  libbpf-dev bpftool libelf-dev                 # BPF objects and skeletons
  libdwarf-dev libzydis-dev libunwind-dev       # binary analysis
  libprotobuf-dev protobuf-compiler             # pprof profile.proto
  libzstd-dev zlib1g-dev                        # gzip pprof, zstd test data
  nlohmann-json3-dev libcli11-dev libfmt-dev    # JSON, CLI parsing, formatting
  libgtest-dev libgmock-dev libbenchmark-dev googletest
  golang-go                                     # Go 1.19: builds the test workloads
  qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross  # arm64 workloads (cgo too)
  delve gdb linux-perf                          # oracles and baselines
  gdb-multiarch                                 # arm64 core captures through qemu's gdbstub
  libcap2-bin                                   # capsh: tests drop BPF capabilities
  binutils file procps jq
  ccache                                        # shared compiler cache (worktrees, re-runs)
  libcpp-httplib-dev libcurl4-openssl-dev       # agent: HTTP server (profiles, metrics), push client
  prometheus                                    # a real Prometheus server scrapes the agent in tests
  liblz4-dev liblzma-dev lz4 xz-utils zstd      # compressed production cores (zstd, lz4, xz)
  python3-junitparser                           # a real JUnit consumer reads check --junit in tests
  systemd                                       # systemd-analyze verify checks the agent unit
  help2man man-db                               # man pages from --help; tests render them
  dpkg-dev                                      # dpkg-shlibdeps: the .deb's library dependencies
)
# npm fetches the real Go 1.27 test binaries (lefthook); the machine image may carry its own
# Node.js with npm, which Debian's npm package would conflict with.
command -v npm >/dev/null || pkgs+=(npm)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "install-deps: all packages present"
