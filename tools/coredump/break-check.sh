#!/usr/bin/env bash
# Shows that the coredump cases and the unwind core's unit tests guard every crossing: for each
# one-line break below, applied to a scratch copy of HEAD, `switchback coredump check` must fail
# at least one case or unwind_core_test at least one test (rules whose state no core holds yet,
# such as the saved-pc rule's stale goroutines, are guarded by unit tests over synthetic stacks).
#   tools/coredump/break-check.sh [SCRATCH_DIR]        (one build, then relinks; the first check
#                                                        extracts every case into SCRATCH_DIR/cache)
#   BREAKS=REGEX tools/coredump/break-check.sh          only the breaks whose name matches
set -euo pipefail
cd "$(dirname "$0")/../.."
scratch=${1:-/tmp/switchback-break-check}
rm -rf "$scratch/src" && mkdir -p "$scratch/src"  # keeps $scratch/cache (extracted cases) between runs
git archive HEAD | tar -x -C "$scratch/src"
unwind=$scratch/src/ebpf/unwind
rm -rf "$scratch/unwind.orig" && cp -r "$unwind" "$scratch/unwind.orig"  # every break starts from these
cmake -S "$scratch/src" -B "$scratch/build" -G Ninja >/dev/null
ninja -C "$scratch/build" switchback unwind_core_test goroutine_labels_test >/dev/null

# name | exact line (fixed string, \n for a newline, @@ for C's ||: no '|' in it) | replacement
# [| file in ebpf/unwind/, default unwind_core.h]
mutations=(
  "leaf (amd64 pcsp slot)|    sb_u64 slot = st->w->sp + (sb_u64)delta;|    sb_u64 slot = st->w->sp;"
  "systemstack (amd64 curg.sched.bp)|  sb_switch_to(st, caller, sp + 8, bp);|  sb_switch_to(st, caller, sp + 8, 0);"
  "mcall (goroutine's saved bp)|  sb_switch_to(st, pc, sp, bp);|  sb_switch_to(st, pc, sp, 0);"
  "mcall stale check|    if (cand_m != 0 && !(cand_m == st->w->m && cand == st->w->curg))|    if (0)"
  "morestack (emit the growing function)|  sb_emit(st, pc, 0); /* f itself, stopped at its call to morestack */|  /* broken */"
  "asmcgocall dispatch|                                  kind == SB_FN_ASMCGOCALL ? SB_CROSS_ASMCGOCALL : SB_CROSS_SYSTEMSTACK);|                                  SB_CROSS_SYSTEMSTACK);"
  "vdso (amd64 frame record)|  sb_u64 record = SB_ARM64(st) ? vsp - 8 : vsp - 16;|  sb_u64 record = SB_ARM64(st) ? vsp - 8 : vsp - 8;"
  "arm64 SP walk|      st->w->sp = sp + (sb_u64)delta;|      st->w->sp = sp;"
  "arm64 systemstack (sched.bp)|    st->w->sp = bp + 8; /* the switch function's own SP on the goroutine stack */|    st->w->sp = bp;"
  "signal (amd64 ucontext)|    sb_u64 mc = entry_sp + SB_AMD64_MCTX;|    sb_u64 mc = entry_sp + SB_AMD64_MCTX + 8;"
  "signal (arm64 ucontext)|    sb_u64 x = entry_sp + SB_ARM64_MCTX_X0;|    sb_u64 x = entry_sp + SB_ARM64_MCTX_X0 + 8;"
  "signal (interrupted pc exact)|  st->w->frame_exact = 1;\n  st->w->lr = lr;|  st->w->frame_exact = 0;\n  st->w->lr = lr;"
  "cgocallback (g0 frame)|  sb_u64 slot = SB_ARM64(st) ? g0_sp : g0_sp + (sb_u64)delta;|  sb_u64 slot = SB_ARM64(st) ? g0_sp + 16 : g0_sp + (sb_u64)delta + 16;"
  "cgocallback dispatch|    r = sb_g_cross_cgocallback(w, pi, st->out, st->cnt, lookup_pc);|    r = -1;"
  "asyncPreempt arm64 (pushCall's 16 bytes)|        st->w->sp += 16;|        st->w->sp += 0;"
  "asyncPreempt amd64 (interrupted pc exact)|    st->w->exact_sp = 1;\n    st->w->frame_exact = 1;\n    st->w->injected_call = 0;|    st->w->exact_sp = 0;\n    st->w->frame_exact = 0;\n    st->w->injected_call = 0;"
  "under schedule (next curg)|  if (kind == SB_FN_SCHEDULE && w->on_g0) w->scheduling = 1;|"
  "arm64 asmcgocall (sched.bp, all versions)|  if (SB_ARM64(st) && crossing == SB_CROSS_ASMCGOCALL) recipe = SB_PI_SWITCH_SCHED_BP;|"
  "saved-pc rule: mcall's save|  if (save == SB_SAVE_MCALL) return sb_is_mcall_site(pi, pc);|  if (save == SB_SAVE_MCALL) return 1;"
  "saved-pc rule: morestack's save|  if (save == SB_SAVE_MORESTACK) return sb_after_morestack_call(st, pc);|  if (save == SB_SAVE_MORESTACK) return 1;"
  "saved-pc rule: systemstack_switch|  return pi->sswitch_start != 0 && pc >= pi->sswitch_start && pc < pi->sswitch_end;|  return 1;"
  "morestack under schedule|  sb_u64 gp = st->w->scheduling ? 0 : sb_live_curg(st);|  sb_u64 gp = sb_live_curg(st);"
  "newstack morebuf (caller binding)|    if (want_caller_sp != 0 && (ret != want_caller_pc @@ (SB_ARM64(st) ? sp : sp + 8) != want_caller_sp))|    if (0)"
  "newstack morebuf (running goroutine)|  if (gp_m != 0 && !(gp_m == st->w->m && gp == st->w->curg))|  if (0)"
  "newstack morebuf (CFA)|  if (cfa != st->w->sp) return sb_cross_stopped(st, SB_CROSS_MORESTACK, SB_STOP_STALE_GOROUTINE);|"
  "saved-pc rule: mcall's callee|  if (!sb_mcall_callee_ok(st, gp)) return sb_cross_stopped(st, SB_CROSS_MCALL, moved);|"
  "mcall's link (not checked)|    if (!sb_sp_in_stack(st, gp, sp) @@ !sb_mcall_link_ok(st, sp, bp)) return sb_cross_stopped(st, crossing, moved);|    if (!sb_sp_in_stack(st, gp, sp)) return sb_cross_stopped(st, crossing, moved);"
  "mcall's link (Go 1.19: gobuf.bp)|  if (flags & SB_PI_MCALL_LINK_BP) return st->w->fp == sched_bp;|  if (flags & SB_PI_MCALL_LINK_BP) return st->w->fp == sched_bp + 16;"
  "mcall's link (Go 1.21-1.24: gobuf.sp - 16)|  if (flags & SB_PI_MCALL_LINK_FRAME) return st->w->fp == sched_sp - 16;|  if (flags & SB_PI_MCALL_LINK_FRAME) return st->w->fp == sched_sp - 8;"
  "goroutine_left (mcall's g0 slot)|  int moved = from_slot ? SB_STOP_GOROUTINE_LEFT : SB_STOP_STALE_GOROUTINE;|  int moved = SB_STOP_STALE_GOROUTINE;"
  "goroutine_left (newstack's morebuf)|  long r = sb_gobuf_resume(st, SB_CROSS_MORESTACK, gp, SB_SAVE_MORESTACK, mb_pc, mb_sp, SB_STOP_GOROUTINE_LEFT);|  long r = sb_gobuf_resume(st, SB_CROSS_MORESTACK, gp, SB_SAVE_MORESTACK, mb_pc, mb_sp, SB_STOP_STALE_GOROUTINE);"
  "systemstack window (switch in)|  if (in_g0_window && st->w->g == st->w->g0 && sb_sp_in_stack(st, st->w->curg, regs->sp)) {|  if (0) {"
  "systemstack window (switch back)|  } else if (in_gp_window && st->w->g == st->w->curg && sb_sp_in_stack(st, st->w->g0, regs->sp)) {|  } else if (0) {"
  "arm64 systemstack window (inside save_g)|  int in_save_g = SB_ARM64(st) && pc >= pi->save_g_lo && pc < pi->save_g_hi;|  int in_save_g = 0;"
  "arm64 gogo (caller of runtime.gogo)|    st->w->pc = site; /* a return address in the caller, whose SP is the sampled one */|    st->w->pc = ret;"
  "arm64 gogo (gobuf.lr before its load)|      (SB_ARM64(st) && pc < pi->gogo_lr_loaded && sb_read_u64(st, base + o->gobuf_lr, &lr))) {|      0) {"
  "frameless caller (SP step)|  if (kind == SB_FN_FRAMELESS_CALLER && !SB_ARM64(st) && w->sp != 0) w->exact_sp = 1;|"
  "pcsp bucket index (last run)|      count = hi - lo + 1;|      count = hi - lo;"
  "range span (special_lo)|    pi->special_lo = pi->ranges[0].start;|    pi->special_lo = pi->ranges[0].start + 1;|proc_info_spans.h"
  "special blocks (free bitmap)|      pi->special_free[b >> 6] &= ~(uint64_t{1} << (b & 63));|      ;|proc_info_spans.h"
  "plain-frame burst (frame limit)|    if (st->out->nframes + 1 >= w->max_frames) return 0; /* the loop body's limit checks */|"
  "plain-frame burst (special frame)|    if (!sb_no_special(pi, lookup_pc)) return 0; /* may be a switch, a root...: the loop body */|"
  "systemstack/asmcgocall direct path|  if (hi == 0) return 1;|  return 1;"
  "asmcgocall direct path (entry SP)|  if (r < 0 && kind == SB_FN_ASMCGOCALL) r = sb_asmcgocall_direct(st, lookup_pc);|"
  "asmcgocall direct path (Go text)|      (entry_sp & 7) != 0 @@ sb_read_u64(st, entry_sp, &ret) @@ !sb_in_go_text(pi, ret))|      (entry_sp & 7) != 0 @@ sb_read_u64(st, entry_sp, &ret))"
  "root ranges (end)|    if (off >= pi->roots[i].lo && off < pi->roots[i].hi) return 1;|    if (off >= pi->roots[i].lo && off <= pi->roots[i].hi) return 1;"
  "root ranges (only roots)|    if (r.kind != SB_FN_ROOT @@ r.start < pi->text_start @@ r.end <= r.start @@ r.end > pi->text_end @@|    if (r.kind == SB_FN_NONE @@ r.start < pi->text_start @@ r.end <= r.start @@ r.end > pi->text_end @@|proc_info_spans.h"
  "stack window (page end)|    sb_u64 len = 4096 - (addr & 4095); /* to the end of addr's (4 KiB or larger) page */|    sb_u64 len = SB_STACK_WINDOW_BYTES;"
  "stack window (offset)|  sb_u64 off = addr - w->win_base;|  sb_u64 off = addr - w->win_base + 8;"
  "asmcgocall's windows|    if (pi->acgo_g0_hi != 0)|    if (0)"
  "arm64 switch frame from sched.sp|    st->w->sp = sp; /* the switch function's own SP on the goroutine stack */|    st->w->sp = bp + 8;"
  "asmcgocall: the callback's goroutine|  sb_u64 gp = crossing == SB_CROSS_ASMCGOCALL ? st->w->cb_g : 0;|  sb_u64 gp = 0;"
  "asmcgocall: save from the fake frame|  if (crossing == SB_CROSS_ASMCGOCALL && st->w->cb_g == gp) {|  if (0) {"
  "asmcgocall: caller's bp from pcsp|  if (bp == 0 @@ crossing == SB_CROSS_ASMCGOCALL) {|  if (bp == 0) {"
  "cgocallback: the outer of nested callbacks|  g0_sp = st->w->cb_g0_sp;|  g0_sp = 0;"
  "cgocallback sampled: the stack SP is on|  if (w->frame_exact) w->on_g0 = (sb_u8)sb_sp_in_stack(st, g0, w->sp);|  if (w->frame_exact) w->on_g0 = 1;"
  "cgocallback on g0: its g0.sched.sp save|sched_sp == w->sp &&|0 &&"
  "crosscall2 (pcsp step)|  if (kind == SB_FN_CROSSCALL2) {|  if (0) {"
  "crosscall2 (the stub's BP)|    if (r[1] == ret) {|    if (0) {"
  "crosscall2 (arm64 LR at frame top)|    if (!w->frame_exact @@ !w->lr_valid @@ sb_classify(pi, w->lr) == SB_FN_CROSSCALL2) {|    if (0) {"
  "crosscall2 (arm64 LR in its prologue)|    if (!w->frame_exact @@ !w->lr_valid @@ sb_classify(pi, w->lr) == SB_FN_CROSSCALL2) {|    if (1) {"
  "clone's child (TLS g 0)|  return sb_read_u64(st, regs->tls_base + (sb_u64)pi->tls_g_offset, &g) == 0 && g == 0;|  return 1;"
  "labels: slice entry's value (1.24+)|    if (sb_read_label(env, e, e + 16, &out->l[i & (SB_MAX_LABELS - 1)]) != 0) {|    if (sb_read_label(env, e, e, &out->l[i & (SB_MAX_LABELS - 1)]) != 0) {|goroutine_labels.h"
  "labels: hmap bucket's elems (<=1.23)|      sb_u64 v = bucket + SB_BMAP_ELEMS + (sb_u64)i * 16;|      sb_u64 v = bucket + SB_BMAP_KEYS + (sb_u64)i * 16;|goroutine_labels.h"
)
# Puts back the headers the last break changed, and only those: copying all of them would
# give every header a new mtime and rebuild everything that includes any (minutes per break).
restore_unwind() {
  local f
  for f in "$scratch/unwind.orig/"*; do
    cmp -s "$f" "$unwind/$(basename "$f")" || cp "$f" "$unwind/"
  done
}
printf '%-38s %s\n' "break" "cases failing | unit tests failing"
status=0
for m in "${mutations[@]}"; do
  IFS='|' read -r name from to file <<<"$m"
  [[ -z ${BREAKS:-} || $name =~ $BREAKS ]] || continue
  restore_unwind
  core=$unwind/${file:-unwind_core.h}
  FROM="$from" TO="$to" python3 - "$core" <<'PY'
import os, sys
p = sys.argv[1]; s = open(p).read(); f = os.environ["FROM"]
f = f.replace("\\n", "\n").replace("@@", "||"); t = os.environ["TO"].replace("\\n", "\n").replace("@@", "||")
if s.count(f) != 1: sys.exit(f"mutation target not found exactly once: {f!r}")
open(p, "w").write(s.replace(f, t))
PY
  ninja -C "$scratch/build" switchback unwind_core_test goroutine_labels_test >/dev/null
  out=$("$scratch/build/tools/switchback" coredump check testdata/coredumps --cache "$scratch/cache" || true)
  # (no case failing is an answer, not an error: the unit tests may still catch the break)
  failing=$(grep -E ' (FAIL|ERROR) ' <<<"$out" | awk '{print $1}' | paste -sd, - || true)
  tests=$( { "$scratch/build/tests/unwind/unwind_core_test"; "$scratch/build/tests/unwind/goroutine_labels_test"; } 2>/dev/null |
    sed -n 's/^\[  FAILED  \] \([A-Za-z0-9_.]*\)$/\1/p' | sort -u | paste -sd, - || true)
  printf '%-38s %s | %s\n' "$name" "${failing:--}" "${tests:--}"
  [[ -n $failing || -n $tests ]] || { echo "  NOT CAUGHT: $name"; status=1; }
done
restore_unwind
exit $status
