#!/usr/bin/env bash
# Turns captures (tools/coredump/capture-*.sh output) into coredump test cases:
#   tools/coredump/make-cases.sh CAPTURE_DIR ARCH [STATE...]
# Each case is checked against Delve's view of every goroutine on a thread (`--dlv`), named
# ARCH-GOVERSION-STATE, and must take the crossing its state is about.
set -euo pipefail
cd "$(dirname "$0")/../.."
SWITCHBACK=${SWITCHBACK:-build/tools/switchback}
DIR=${CASE_DIR:-testdata/coredumps}
cap=$1; arch=$2; shift 2
states=("$@")
[[ ${#states[@]} -gt 0 ]] || states=(leaf systemstack mcall-curg dropg gosched morestack cgo cgocallback vdso signal crash idle stale stale-parked)

must_cross() {  # the crossing a state proves, per arch
  case "$1/$arch" in
    leaf/*) echo leaf ;;
    systemstack/*|labels/amd64|systemstack-nested/amd64) echo systemstack ;;
    mcall-curg/*|dropg/amd64|gosched/amd64) echo mcall ;;
    morestack/amd64) echo morestack ;;  # the arm64 capture sits in copystack: a named stop
    cgo/*) echo asmcgocall ;;
    cgocallback/*) echo cgocallback ;;
    signal/*|crash/*) echo signal ;;
    asyncpreempt/*) echo asyncpreempt ;;
    vdso/amd64) echo vdso ;;
    *) echo "" ;;
  esac
}

for state in "${states[@]}"; do
  meta="$cap/$state.meta.json"
  [[ -f $meta ]] || { echo "make-cases: no capture for $state in $cap" >&2; continue; }
  core="$cap/$(jq -r .core "$meta")"
  bin="$cap/$(jq -r .binary "$meta")"
  gover=$(jq -r .go_version "$meta")
  name="$arch-$gover-$state"
  args=(coredump new --core "$core" --binary "$bin" --name "$name" --dir "$DIR" --state "$state"
        --description "$(jq -r '.description // empty' "$meta")")
  mc=$(must_cross "$state")
  [[ -n $mc ]] && args+=(--must-cross "$mc")
  dlv="$cap/$state.dlv.txt"
  [[ -f $dlv ]] && args+=(--dlv "$dlv")
  gdbbt="$cap/$state.gdb-bt.txt"
  [[ -f $gdbbt ]] && args+=(--gdb "$gdbbt")
  if [[ $state/$arch == cgo/arm64 ]]; then
    # gcc on aarch64 omits frame records in leaf functions (-momit-leaf-frame-pointer is the
    # default); Delve finds the caller through DWARF CFI, the frame-pointer walk cannot.
    args+=(--accept-delve-difference "frameless C leaf on arm64: its caller (in LR) is not recovered")
  fi
  if [[ $state/$arch == vdso/arm64 ]]; then
    # Delve follows arm64 frame pointers, which Go 1.19's copystack leaves pointing at the old
    # stack; it skips frames that the SP walk finds (runtime's own traceback agrees with us).
    args+=(--accept-delve-difference "Delve follows stale arm64 frame pointers (Go 1.19 copystack) and skips frames")
  fi
  if [[ $state/$arch == morestack/arm64 ]]; then
    # Caught inside copystack: Delve puts the thread's g0 frames (copystack's callees) on top of
    # the goroutine's saved frames; we stop at `copystack` after f and its caller.
    args+=(--accept-delve-difference "Delve stitches the g0 frames inside copystack onto the goroutine's saved frames")
  fi
  if [[ $state/$arch == asyncpreempt/arm64 ]]; then
    # The interrupted function is a frameless leaf (main.spin); asyncPreempt's injected call set
    # LR to the interrupted pc, and Delve 1.20, taking the leaf's return address from that LR,
    # repeats main.spin until its depth limit. We take the interrupted LR pushCall saved.
    args+=(--accept-delve-difference "Delve repeats the interrupted frameless leaf under asyncPreempt (its caller taken from LR, which holds the interrupted pc)")
  fi
  if [[ $state/$arch == systemstack-nested/amd64 && $gover == go1.19* ]]; then
    # Delve 1.20 shows a Go 1.19 thread on g0 as its goroutine's saved stack alone (from
    # curg.sched: systemstack, then the goroutine), without the g0 frames gdb's bt has.
    args+=(--accept-delve-difference "Delve shows a Go 1.19 thread on g0 as the goroutine's saved stack alone, without the g0 frames (gdb's bt has them)")
  fi
  if [[ $state == cgocallback ]]; then
    # Delve 1.20 follows crosscall2's frame records, which from Go 1.21 on are two (the C stub
    # that called crosscall2 then shows twice), and ends a C-created thread's stack at its
    # thread function, where we also show libc's start_thread (gdb checks the Go frames).
    args+=(--accept-delve-difference "Delve repeats the C stub under crosscall2 (two frame records, Go 1.21+) and ends a C thread at its thread function")
  fi
  echo "== $name"
  "$SWITCHBACK" "${args[@]}" || echo "make-cases: $name failed" >&2
done
