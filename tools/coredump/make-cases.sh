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
    systemstack/*|labels/amd64|systemstack-nested/amd64|sstack-gp/arm64) echo systemstack ;;
    acgo-gp/*) echo asmcgocall ;;
    mcall-curg/*|dropg/amd64|gosched/amd64|gogo-g0/arm64) echo mcall ;;
    morestack/amd64) echo morestack ;;  # the arm64 capture sits in copystack: a named stop
    cgo/*) echo asmcgocall ;;
    cgocallback/*) echo cgocallback ;;
    cgocallback-nested/*) echo systemstack cgocallback asmcgocall ;;
    cgocallback-g0/*) echo asmcgocall ;;
    cgocallback-inner-g0/*) echo asmcgocall cgocallback ;;
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
  desc=$(jq -r '.description // empty' "$meta")
  case $state/$arch in  # the windows (capture-*.sh's breakpoint from the function's code)
    gogo-g0/*) desc=${desc:-"Stopped in arm64 gogo's g0 window at $(jq -r .stopped_pc "$meta") (the instruction after BL runtime.save_g: R28 is the next goroutine, SP still g0's, LR gogo's own pc), on an M that parked a goroutine through park_m. The caller of runtime.gogo (execute) is found from [SP] and the one BL gogo in execute (sb_proc_info.gogo_callers): the frame-record chain from R29 (classify.py) has the other g0 frames but not execute, Delve 1.20 repeats gogo; the goroutine is park_m's, named by its spill (Delve's frames for it agree)."} ;;
    gogo-gp/*) desc=${desc:-"Stopped in arm64 gogo's gp window at $(jq -r .stopped_pc "$meta") (the instruction after MOVD R0, RSP: SP is the goroutine's sched.sp, R29 and LR still the g0 side's, the gobuf not yet cleared). The goroutine is walked from sched.pc (exact), its caller from sched.lr, then its frame records from sched.bp: equal to Go's own starting point (tools/coredump/fp_oracle.py --gobuf); Delve 1.20 repeats gogo."} ;;
    sstack-g0/*) desc=${desc:-"Stopped in arm64 systemstack's g0 window at $(jq -r .stopped_pc "$meta") (the instruction after its first BL runtime.save_g: R28 is g0, SP and R29 still the goroutine's), while a goroutine allocates large objects. Walked as on the goroutine (unwinder/systemstack_window.h): systemstack's frame, then its caller, named after m.curg and not on g0; before this window was decoded the thread was taken for g0's and the switch crossed before it happened. Oracle: the frame-record chain from R29 (tools/coredump/fp_oracle.py) and Delve."} ;;
    sstack-gp/*) desc=${desc:-"Stopped in arm64 systemstack's gp window at $(jq -r .stopped_pc "$meta") (the instruction after its second BL runtime.save_g: R28 is m.curg again, SP still on g0 where fn returned). Walked as on g0, crossing systemstack to the goroutine; before this window was decoded the walk took g0's SP for the goroutine's and read the fake return into runtime.mstart at g0.sched.sp (a wrong stack counted whole). Oracle: the stopped pc, then the goroutine's gobuf (tools/coredump/fp_oracle.py --gobuf: the frame-record chain from sched.bp, systemstack's own record); Delve walks g0's SP as the old unwinder did."} ;;
    acgo-g0/arm64) desc=${desc:-"Stopped in arm64 asmcgocall's g0 window at $(jq -r .stopped_pc "$meta") (the instruction after its first BL runtime.save_g: R28 and the TLS slot are g0, SP and R29 still the goroutine's), while a goroutine calls C in a loop. Walked as on the goroutine (FindAsmcgocallWindow): asmcgocall's frame, then cgocall, named after the goroutine and not on g0. Oracle: the frame-record chain from R29 (tools/coredump/fp_oracle.py) and Delve."} ;;
    acgo-gp/arm64) desc=${desc:-"Stopped in arm64 asmcgocall's gp window at $(jq -r .stopped_pc "$meta") (the instruction after its second BL runtime.save_g: R28 and the TLS slot are the goroutine again, SP still on g0 where C returned, at the words asmcgocall saved there: the goroutine's g and its stack depth). Walked as on g0, crossing asmcgocall to cgocall; walked as on the goroutine, g0's SP would be taken for the goroutine's and the saved g read as asmcgocall's return address. Oracle: the goroutine's gobuf (tools/coredump/fp_oracle.py --gobuf)."} ;;
    acgo-g0/*) desc=${desc:-"Stopped in amd64 asmcgocall's g0 window at $(jq -r .stopped_pc "$meta") (the SP load right after MOVQ SI, FS:g: TLS g is already g0, SP still the goroutine's), while a goroutine calls C in a loop. Walked as on the goroutine (FindAsmcgocallWindow): asmcgocall's frame, then cgocall, named after the goroutine and not on g0."} ;;
    cgocallback-nested/*) desc=${desc:-"Two cgo callbacks deep on one goroutine (Go -> cc_nest_outer -> goNestOuter -> cc_nest_inner -> goNestInner), stopped on g0 in the inner callback's large allocation (runtime.(*mheap).alloc.func1 under systemstack), whose save overwrote the goroutine's gobuf. Crossed: systemstack (the gobuf), the inner cgocallback to its C frames on g0, asmcgocall from the inner callback's fake frame (not the gobuf, which holds systemstack's save), the outer cgocallback at the g0 SP the inner one saved on g0 (not m.g0.sched.sp, the inner one's), asmcgocall from the outer fake frame, down to goexit."} ;;
    cgocallback-g0/*) desc=${desc:-"Stopped in runtime.cgocallback on g0 at $(jq -r .stopped_pc "$meta"), its first instruction after the prologue (g not yet the goroutine, SP still g0's), while C calls Go in a loop. Walked as g0's: cgocallback, crosscall2, the C stub (goCallback) and its C callers, then asmcgocall crossed. crosscall2 is stepped out of by its pcsp: from Go 1.21 on amd64 its inner frame record's return slot holds the C stub's BP, which a frame-pointer step emitted as a frame; arm64 keeps LR at the top of its frame."} ;;
    cgocallback-inner-g0/*) desc=${desc:-"Two cgo callbacks deep on one goroutine (Go -> cc_nest_outer -> goNestOuter -> cc_nest_inner -> goNestInner), stopped in the inner callback's runtime.cgocallback on g0 at $(jq -r .stopped_pc "$meta"), right after it stored its SP as m.g0.sched.sp (the outer callback's g0 SP saved at its SP + 0, arm64 + 16). Walked as g0's: the inner C frames, asmcgocall from the gobuf, the outer callback's Go frames, then the outer cgocallback crossed at the g0 SP saved in this frame, not at m.g0.sched.sp, which names this frame (crossed there, the inner C frames would show twice; Delve 1.20 makes that mistake)."} ;;
    acgo-gp/*) desc=${desc:-"Stopped in amd64 asmcgocall's gp window at $(jq -r .stopped_pc "$meta") (MOVQ SI, SP right after MOVQ DI, FS:g: TLS g is the goroutine again, SP still on g0 where C returned). Walked as on g0, crossing asmcgocall to cgocall; walked as on the goroutine, g0's SP would be taken for the goroutine's and asmcgocall's saved g (Go 1.21+) or stack depth read as a return address: a stray frame in a stack counted whole (8 of 5,049 samples in one recording of a short-cgo-call loop on Go 1.27)."} ;;
  esac
  args=(coredump new --core "$core" --binary "$bin" --name "$name" --dir "$DIR" --state "$state"
        --description "$desc")
  mc=$(must_cross "$state")
  for c in $mc; do args+=(--must-cross "$c"); done
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
  if [[ $state/$arch == gogo-gp/arm64 ]]; then
    # Delve 1.20 unwinds the thread from its registers: pc in gogo and LR gogo's own pc (the
    # BL save_g), so it repeats gogo; the goroutine's frames are checked with fp_oracle.py --gobuf.
    args+=(--accept-delve-difference "Delve repeats gogo (LR holds gogo's own pc after BL save_g); checked against the goroutine's gobuf instead (fp_oracle.py --gobuf)")
  fi
  if [[ $state/$arch == sstack-gp/arm64 ]]; then
    # Delve 1.20 unwinds the thread from its registers: pc in systemstack, SP on g0, so the
    # return address it reads there is g0's fake one into mstart; checked with fp_oracle.py --gobuf.
    args+=(--accept-delve-difference "Delve walks systemstack's frame from g0's SP (R28 is m.curg again, SP not yet its): the fake return into runtime.mstart; checked against the goroutine's gobuf instead (fp_oracle.py --gobuf)")
  fi
  if [[ $state/$arch == acgo-gp/arm64 ]]; then
    # Delve 1.20 walks asmcgocall from g0's SP (R28 is the goroutine again, SP not yet its) and
    # stops after it; checked with fp_oracle.py --gobuf.
    args+=(--accept-delve-difference "in asmcgocall's gp window Delve walks from g0's SP and stops after asmcgocall; checked against the goroutine's gobuf instead (fp_oracle.py --gobuf)")
  fi
  if [[ $state == cgocallback-nested && $gover != go1.19* ]]; then
    # Delve 1.20 fails on these goroutine stacks from Go 1.23 on (an internal error in its inline
    # stack reader, as in the systemstack cases of those versions). Checked by hand when made:
    # the program's own runtime.Stack from nestAlloc (same build plus one print) lists the same
    # main.* frames with the same offsets and caller lines, through both callbacks.
    args+=(--oracle "Go's own traceback (runtime.Stack from main.nestAlloc, same source plus the print): equal main.* frames and callers, both callbacks crossed; checked by hand")
  fi
  if [[ $state == cgocallback-inner-g0 ]]; then
    # Delve 1.20 crosses the outer callback at m.g0.sched.sp, which the inner cgocallback has
    # just set to its own frame (the outer one's value is at its SP + 0, arm64 + 16).
    args+=(--accept-delve-difference "Delve crosses the outer callback at m.g0.sched.sp, which the inner cgocallback has just set to its own g0 frame, so it shows the inner crosscall2 and C stub under the outer cgocallback; from Go 1.21 it also repeats the C stub under crosscall2")
  elif [[ $state == cgocallback* ]]; then
    # Delve 1.20 follows crosscall2's frame records, which from Go 1.21 on are two (the C stub
    # that called crosscall2 then shows twice), and ends a C-created thread's stack at its
    # thread function, where we also show libc's start_thread (gdb checks the Go frames).
    args+=(--accept-delve-difference "Delve repeats the C stub under crosscall2 (two frame records, Go 1.21+) and ends a C thread at its thread function")
  fi
  echo "== $name"
  "$SWITCHBACK" "${args[@]}" || echo "make-cases: $name failed" >&2
done
