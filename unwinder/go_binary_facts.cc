#include "unwinder/go_binary_facts.h"

#include <tuple>
#include <utility>

#include <elf.h>

#include <algorithm>
#include <cstring>

#include "ebpf/unwind/delta_index.h"
#include "ebpf/unwind/proc_info_spans.h"
#include "unwinder/arm64_decoder.h"
#include "unwinder/asm_offsets.h"
#include "unwinder/call_sites.h"
#include "unwinder/clone_child.h"
#include "unwinder/dwarf_offsets.h"
#include "unwinder/dwarf_spill_proof.h"
#include "unwinder/frameless_callers.h"
#include "unwinder/go_offsets_table.h"
#include "unwinder/go_version.h"
#include "unwinder/newstack_morebuf.h"
#include "unwinder/tls_slot.h"

namespace sb::unwinder {
namespace {

struct NamedKind {
  const char* name;
  sb_func_kind kind;
  bool optional;  // absent in some versions, link modes or programs: not reported missing
};

// Functions the unwinder must recognise, by their pclntab names (stable across versions,
// unlike funcID numbers). Roots are the runtime's TOPFRAME functions; sigtramp is one too, but
// the walk crosses its signal frame into the interrupted context.
constexpr NamedKind kSpecialFunctions[] = {
    {"runtime.goexit", SB_FN_ROOT, false},
    {"runtime.mstart", SB_FN_ROOT, false},
    {"runtime.rt0_go", SB_FN_ROOT, true},
    // The ELF entry and the jump it makes to rt0_go: a process's first instructions, with the
    // kernel's initial stack (argc, argv) where a return address would be.
    {"_rt0_amd64_linux", SB_FN_ROOT, true},
    {"_rt0_amd64", SB_FN_ROOT, true},
    {"_rt0_arm64_linux", SB_FN_ROOT, true},
    {"_rt0_arm64", SB_FN_ROOT, true},
    {"runtime.sigtramp", SB_FN_SIGTRAMP, false},
    {"runtime.cgoSigtramp", SB_FN_SIGTRAMP, true},
    {"runtime.systemstack", SB_FN_SYSTEMSTACK, false},
    {"runtime.mcall", SB_FN_MCALL, false},
    {"runtime.morestack", SB_FN_MORESTACK, false},
    {"runtime.asmcgocall", SB_FN_ASMCGOCALL, false},
    {"runtime.cgocallback", SB_FN_CGOCALLBACK, true},  // only linked into cgo programs
    {"crosscall2", SB_FN_CROSSCALL2, true},             // likewise (runtime/cgo)
    {"runtime.asyncPreempt", SB_FN_ASYNCPREEMPT, false},
    {"runtime.schedule", SB_FN_SCHEDULE, false},
    {"runtime.goexit0", SB_FN_GOEXIT0, false},
    {"runtime.nanotime1", SB_FN_VDSO_CALLER, true},
    {"runtime.walltime", SB_FN_VDSO_CALLER, true},
    {"time.now", SB_FN_VDSO_CALLER, true},
    {"runtime.vgetrandom1", SB_FN_VDSO_CALLER, true},  // Go 1.24+
};

// amd64 signal restorers (the handler returns into them; they call rt_sigreturn with SP at
// the ucontext): `runtime.sigreturn` up to Go 1.20, `runtime.sigreturn__sigaction` from 1.21.
// arm64 Go sets no restorer (the kernel's vDSO trampoline is used).
constexpr const char* kAmd64SignalRestorers[] = {"runtime.sigreturn__sigaction", "runtime.sigreturn"};

// Every mcall callee in Go 1.19-1.27 (grep `mcall(` in each runtime): park_m, gosched_m,
// goschedguarded_m, goyield_m, goexit0, preemptPark and gopreempt_m (called directly up to
// 1.25; from 1.26 through the closure asyncPreempt2.func1), exitsyscall0 (exitsyscallNoP from
// 1.26), coroswitch_m (1.22+), recovery. Those that spill their g argument on arm64, where the
// g0 slot may name the goroutine after dropg; the slot is decoded from each one's prologue
// (DecodeArm64Spill), so a version whose callee does not spill is reported, never guessed.
// Checked with `go tool objdump` on 1.19, 1.23 and 1.27 arm64 binaries. goexit0, gosched_m,
// gopreempt_m and recovery do not spill: after dropg their goroutine cannot be found.
constexpr const char* kArm64SpillingMcallCallees[] = {
    "runtime.park_m",     "runtime.preemptPark",      "runtime.exitsyscall0",
    "runtime.exitsyscallNoP", "runtime.goyield_m",    "runtime.goschedguarded_m",
    "runtime.coroswitch_m",   "runtime.asyncPreempt2.func1"};

// `MOVD.W R30, -N(RSP)` (STR x30, [sp, #-N]!, pre-index): an arm64 Go prologue allocating N bytes.
bool Arm64LrPush(uint32_t insn, int64_t* frame) {
  if ((insn & 0xFFE00FFF) != 0xF8000FFE) return false;
  int32_t imm9 = static_cast<int32_t>((insn >> 12) & 0x1FF);
  if (imm9 & 0x100) imm9 -= 0x200;
  *frame = -imm9;
  return true;
}

// Decodes where an arm64 mcall callee spills its g argument (R0), from its own prologue:
// `MOVD.W R30, -N(RSP)` (STR x30, [sp, #-N]!) then `MOVD R0, off(RSP)` (STR x0, [sp, #off]).
// mcall calls it with SP = g0.sched.sp - 16, so the slot is g0.sched.sp - 16 - N + off, valid
// from the instruction after the store. Returns false when the prologue does not have that form.
bool DecodeArm64Spill(const sym::ElfFile& elf, const sym::GoFunc& fn, int32_t* slot, uint64_t* valid_from) {
  // 160 bytes: coroswitch_m (Go 1.22+) spills only after 35 instructions that read g's fields.
  auto code = elf.ReadVaddr(fn.entry, static_cast<size_t>(std::min<uint64_t>(fn.end - fn.entry, 160)));
  if (!code.ok()) return false;
  int64_t frame = -1;
  for (size_t i = 0; i + 4 <= code->size(); i += 4) {
    uint32_t insn = 0;
    memcpy(&insn, code->data() + i, 4);
    if (Arm64LrPush(insn, &frame)) continue;
    if (frame > 0 && (insn & 0xFFC003FF) == 0xF90003E0) {  // STR x0, [sp, #imm12*8]
      int64_t off = static_cast<int64_t>((insn >> 10) & 0xFFF) * 8;
      *slot = static_cast<int32_t>(-16 - frame + off);
      *valid_from = fn.entry + i + 4;
      return true;
    }
  }
  return false;
}

// The frame an arm64 Go function allocates in its prologue (`MOVD.W R30, -N(RSP)`), or -1.
int64_t Arm64FrameSize(const sym::ElfFile& elf, const sym::GoFunc& fn) {
  auto code = elf.ReadVaddr(fn.entry, static_cast<size_t>(std::min<uint64_t>(fn.end - fn.entry, 32)));
  for (size_t i = 0; code.ok() && i + 4 <= code->size(); i += 4) {
    uint32_t insn = 0;
    int64_t frame = -1;
    memcpy(&insn, code->data() + i, 4);
    if (Arm64LrPush(insn, &frame)) return frame;
  }
  return -1;
}

// Where DWARF puts `gp` in the arm64 mcall callees that spill it and in runtime.goschedImpl:
// one pass over the binary's DWARF for both collectors below.
using GpHomes = Result<std::map<std::string, std::vector<StackHome>>>;
GpHomes Arm64GpHomes(const std::string& local_file) {
  std::vector<std::string> names(std::begin(kArm64SpillingMcallCallees), std::end(kArm64SpillingMcallCallees));
  names.push_back("runtime.goschedImpl");
  return GpStackHomes(local_file, names);
}

// The arm64 g0 slot of each spilling mcall callee. The prologue decode finds it in every binary;
// where DWARF exists, the slot is used only inside a location-list range of `gp` that says
// DW_OP_fbreg K with the same slot (the callee's CFA is its entry SP = g0.sched.sp - 16, so
// slot = K - 16), clipped to that range. No DWARF (stripped): the prologue decode alone.
void CollectSpillSlots(const sym::GoPclntab& go, const sym::ElfFile& elf, const GpHomes& homes, GoBinaryFacts* f) {
  for (const char* name : kArm64SpillingMcallCallees) {
    auto fn = go.FindFuncByName(name);
    int32_t slot = 0;
    uint64_t from = 0;
    if (!fn) continue;
    if (!DecodeArm64Spill(elf, *fn, &slot, &from)) {
      f->missing.push_back(std::string("g spill slot of ") + name + " (its g0 slot is not used)");
      continue;
    }
    FuncRange r{name, from, fn->end, SB_FN_MCALL_SPILLER, 0, ""};
    r.slot_offset = slot;
    r.slot_source = "prologue";
    if (homes.ok()) {
      auto it = homes->find(name);
      const StackHome* proof = nullptr;
      if (it != homes->end()) {
        for (const auto& h : it->second) {
          // The first range after the spill that puts gp in the decoded slot.
          if (h.fbreg - 16 == slot && h.high > from && (proof == nullptr || h.low < proof->low)) proof = &h;
        }
      }
      if (proof == nullptr) {
        f->missing.push_back(std::string("g spill slot of ") + name + ": DWARF does not put gp at g0.sched.sp" +
                             std::to_string(slot) + " after the spill (its g0 slot is not used)");
        continue;
      }
      r.start = std::max<uint64_t>(from, proof->low);
      r.end = std::min<uint64_t>(fn->end, proof->high);
      r.slot_source = "prologue, proven by DWARF (gp at DW_OP_fbreg " + std::to_string(proof->fbreg) + ")";
    }
    f->ranges.push_back(r);
  }
}

// arm64 mcall callees that pass their g on to runtime.goschedImpl(gp, ...) without keeping it
// themselves: gosched_m (runtime.Gosched) and gopreempt_m (a preemption; from Go 1.26 called by
// asyncPreempt2.func1, which spills, so its range is then never the frame below mcall).
constexpr const char* kArm64GoschedImplCallers[] = {"runtime.gosched_m", "runtime.gopreempt_m"};

// Their goroutine after dropg: goschedImpl spills gp at its entry (`MOVD R0, off(RSP)`, into the
// argument slot of its caller's frame) and never writes that word again. The caller's frame is
// at g0.sched.sp - 16 - N (N its frame size: mcall calls it with SP = g0.sched.sp - 16), so the
// word is at g0.sched.sp - 16 - N + (off - F), F goschedImpl's frame. The range is the return
// site of the caller's BL goschedImpl (its frame below mcall, walked to from goschedImpl's):
// there goschedImpl is running, and the slot is read only once m.curg is 0 or schedule is on the
// stack, which is after goschedImpl's dropg, which is after its spill. Where DWARF exists, gp must
// be at that word (DW_OP_fbreg off - F) from goschedImpl's first call on through its call of
// schedule; without DWARF (stripped) the decode alone, as for the callees that spill.
void CollectGoschedImplSpills(const sym::Binary& bin, const GpHomes& homes, GoBinaryFacts* f) {
  const sym::GoPclntab& go = *bin.go();
  auto impl = go.FindFuncByName("runtime.goschedImpl");
  auto schedule = go.FindFuncByName("runtime.schedule");
  if (!impl || !schedule) return;
  int32_t impl_slot = 0;  // off - F - 16 (DecodeArm64Spill's offset, as if mcall had called it)
  uint64_t impl_from = 0;
  if (!DecodeArm64Spill(bin.elf(), *impl, &impl_slot, &impl_from)) {
    f->missing.push_back("g spill of runtime.goschedImpl (goroutines of Gosched and preemption are not found after dropg)");
    return;
  }
  int64_t fbreg = impl_slot + 16;  // gp at goschedImpl's CFA (entry SP) + fbreg
  uint64_t first_ret = 0, schedule_ret = 0;
  auto code = bin.elf().ReadVaddr(impl->entry, static_cast<size_t>(impl->end - impl->entry));
  for (size_t off = 0; code.ok() && off + 4 <= code->size(); off += 4) {
    A64Insn in = DecodeA64At(code->data(), off, impl->entry);
    if (in.op != A64Op::kBL) continue;
    if (first_ret == 0) first_ret = impl->entry + off + 4;
    if (in.target == schedule->entry && schedule_ret == 0) schedule_ret = impl->entry + off + 4;
  }
  if (first_ret == 0 || schedule_ret == 0) {
    f->missing.push_back("runtime.goschedImpl's call of runtime.schedule (goroutines of Gosched and preemption are not found after dropg)");
    return;
  }
  std::string source = "goschedImpl's prologue";
  if (homes.ok()) {
    bool proven = false;
    if (auto it = homes->find("runtime.goschedImpl"); it != homes->end())
      for (const auto& h : it->second) proven = proven || (h.fbreg == fbreg && h.low <= first_ret && h.high >= schedule_ret);
    if (!proven) {
      f->missing.push_back("g spill of runtime.goschedImpl: DWARF does not put gp at its CFA" + std::to_string(fbreg) +
                           " through its call of schedule (goroutines of Gosched and preemption are not found after dropg)");
      return;
    }
    source += ", proven by DWARF (goschedImpl's gp at DW_OP_fbreg " + std::to_string(fbreg) + ")";
  }
  auto sites = ReturnSitesOfCallsTo(bin, impl->entry);
  for (const char* name : kArm64GoschedImplCallers) {
    auto fn = go.FindFuncByName(name);
    if (!fn) continue;
    int64_t frame = Arm64FrameSize(bin.elf(), *fn);
    uint64_t site = 0;
    for (uint64_t s : sites)
      if (s > fn->entry && s <= fn->end) site = site == 0 ? s : UINT64_MAX;  // exactly one call
    if (frame <= 0 || site == 0 || site == UINT64_MAX) {
      f->missing.push_back(std::string("g of ") + name + " after dropg (no frame or no single call of goschedImpl)");
      continue;
    }
    // The BL's return site only (a pc at the BL itself has not called yet): [BL + 1, BL + 4).
    FuncRange r{name, site - 3, site, SB_FN_MCALL_SPILLER, 0, ""};
    r.slot_offset = static_cast<int32_t>(-16 - frame + fbreg);
    r.slot_source = source;
    f->ranges.push_back(r);
  }
}

void CollectRanges(const sym::Binary& bin, const std::string& local_file, GoBinaryFacts* f) {
  const sym::GoPclntab& go = *bin.go();
  const sym::ElfFile& elf = bin.elf();
  if (f->arch == sym::Arch::kArm64) {
    GpHomes homes = Arm64GpHomes(local_file);
    CollectSpillSlots(go, elf, homes, f);
    CollectGoschedImplSpills(bin, homes, f);
  }
  for (const auto& s : kSpecialFunctions) {
    auto fn = go.FindFuncByName(s.name);
    if (!fn) {
      if (!s.optional) f->missing.push_back(std::string("function ") + s.name);
      continue;
    }
    f->ranges.push_back(FuncRange{s.name, fn->entry, fn->end, s.kind, 0, ""});
  }
  if (f->arch == sym::Arch::kAmd64) {
    for (const char* name : kAmd64SignalRestorers) {
      if (auto fn = go.FindFuncByName(name)) {
        f->ranges.push_back(FuncRange{name, fn->entry, fn->end, SB_FN_SIGRETURN, 0, ""});
        break;
      }
    }
  }
}

// amd64 functions that call with no frame (frameless_callers.h), other than those the unwinder
// already knows by name (roots, switch functions) or that hold such a range (clone's child).
// Last, since MakeProcInfo keeps the first SB_MAX_RANGES ranges: these go first if any must.
void CollectFramelessCallers(const sym::Binary& bin, GoBinaryFacts* f) {
  size_t before = f->ranges.size();
  for (const auto& c : FindFramelessCallers(bin)) {
    bool known = false;
    for (size_t i = 0; i < before; i++)
      known = known || (f->ranges[i].start < c.end && c.entry < f->ranges[i].end);
    if (!known) f->ranges.push_back(FuncRange{c.name, c.entry, c.end, SB_FN_FRAMELESS_CALLER, 0, ""});
  }
  if (f->ranges.size() > SB_MAX_RANGES)
    f->missing.push_back(std::to_string(f->ranges.size() - SB_MAX_RANGES) + " of " +
                         std::to_string(f->ranges.size() - before) +
                         " frameless callers past the unwinder's " + std::to_string(SB_MAX_RANGES) +
                         " ranges: stacks through them lose their caller");
}

// The save points of the saved-pc rule (see GoBinaryFacts).
void CollectSavePoints(const sym::Binary& bin, GoBinaryFacts* f) {
  const sym::GoPclntab& go = *bin.go();
  if (auto mcall = go.FindFuncByName("runtime.mcall")) {
    f->mcall_return_sites = ReturnSitesOfCallsTo(bin, mcall->entry);
    if (f->mcall_return_sites.empty()) f->missing.push_back("calls to runtime.mcall (no goroutine is crossed under mcall)");
    if (f->mcall_return_sites.size() > SB_MAX_MCALL_SITES)
      f->missing.push_back(std::to_string(f->mcall_return_sites.size() - SB_MAX_MCALL_SITES) +
                           " calls to runtime.mcall past the first " + std::to_string(SB_MAX_MCALL_SITES) +
                           " (goroutines parked there are not crossed)");
    f->mcall_callees = DecodeMcallCallees(bin, f->mcall_return_sites);
    for (const auto& c : f->mcall_callees) {
      if (c.fn_end != 0) continue;
      auto fn = go.FindFunc(c.site - 1);
      f->missing.push_back("the function " + std::string(fn ? fn->name : "?") + "'s mcall passes (" + c.why +
                           "): its callee is not checked");
    }
  }
  if (auto fn = go.FindFuncByName("runtime.morestack")) f->morestack = fn->entry;
  if (auto fn = go.FindFuncByName("runtime.morestack_noctxt")) f->morestack_noctxt = fn->entry;
  if (auto fn = go.FindFuncByName("runtime.systemstack_switch")) {
    f->systemstack_switch_start = fn->entry;
    f->systemstack_switch_end = fn->end;
  } else {
    f->missing.push_back("function runtime.systemstack_switch");
  }
}

// Where the goroutine that newstack preempted is still named (sb_morestack_from_morebuf):
// newstack's `morebuf`, where DWARF's location list proves it across every call newstack
// makes to the functions that preempt (gopreempt_m up to Go 1.20, where it is not inlined;
// goschedImpl where gopreempt_m is; preemptPark), or else where newstack's own code proves it
// (newstack_morebuf.h: the copy of m.morebuf, never written again; stripped binaries). Where
// both exist they must agree. Neither: not proven, never guessed.
void CollectNewstackMorebuf(const sym::Binary& bin, const std::string& local_file, GoBinaryFacts* f) {
  const sym::GoPclntab& go = *bin.go();
  auto newstack = go.FindFuncByName("runtime.newstack");
  if (!newstack) return;
  MorebufFromCode code;
  if (f->has_offsets) code = NewstackMorebufFromCode(bin, f->offsets);
  else code.why = "runtime offsets unknown";
  f->morebuf_code_found = code.found;
  f->morebuf_code_cfa_off = code.cfa_off;
  f->morebuf_code_gobuf_g = code.gobuf_g;
  f->morebuf_code_source = code.found ? "code: copy of m.morebuf at CFA" + std::to_string(code.cfa_off) +
                                            " never written again up to " + std::to_string(code.calls) +
                                            " preempting calls, gobuf.g +" + std::to_string(code.gobuf_g) +
                                            " (from m.morebuf's clears)"
                                      : "code: not found (" + code.why + ")";
  auto use_code = [&](const std::string& dwarf_why) {
    if (!code.found) {
      f->morebuf_source = "not proven: " + dwarf_why + "; " + f->morebuf_code_source;
      f->missing.push_back("newstack's morebuf (" + f->morebuf_source + "): a goroutine newstack preempted is not recovered");
      return;
    }
    f->newstack_morebuf_lo = code.lo;
    f->newstack_morebuf_hi = code.hi;
    f->morebuf_cfa_off = code.cfa_off;
    f->gobuf_g = code.gobuf_g;
    f->morebuf_source = f->morebuf_code_source + " (DWARF: " + dwarf_why + ")";
  };
  auto home = NewstackMorebufHome(local_file);
  if (!home.ok()) return use_code(home.error());
  std::vector<uint64_t> sites;
  for (const char* callee : {"runtime.gopreempt_m", "runtime.goschedImpl", "runtime.preemptPark"}) {
    auto fn = go.FindFuncByName(callee);
    if (!fn) continue;
    for (uint64_t site : ReturnSitesOfCallsTo(bin, fn->entry))
      if (site > newstack->entry && site < newstack->end) sites.push_back(site);
  }
  const StackHome* proof = nullptr;
  for (const auto& h : home->homes) {
    bool covers = !sites.empty();
    for (uint64_t site : sites) covers = covers && h.low <= site - 1 && site < h.high;
    if (covers) proof = &h;
  }
  if (proof == nullptr || home->gobuf_g > 0xffff)
    return use_code(sites.empty() ? "no call from runtime.newstack to gopreempt_m/goschedImpl/preemptPark found"
                                  : "no location-list entry of newstack's morebuf covers its preempting calls");
  f->newstack_morebuf_lo = std::max<uint64_t>(proof->low, newstack->entry);
  f->newstack_morebuf_hi = std::min<uint64_t>(proof->high, newstack->end);
  f->morebuf_cfa_off = static_cast<int32_t>(proof->fbreg);
  f->gobuf_g = static_cast<uint16_t>(home->gobuf_g);
  f->morebuf_source = "DWARF: morebuf at DW_OP_fbreg " + std::to_string(proof->fbreg) + " across " +
                      std::to_string(sites.size()) + " preempting calls, gobuf.g +" + std::to_string(home->gobuf_g);
  if (code.found && (code.cfa_off != proof->fbreg || code.gobuf_g != home->gobuf_g))
    f->missing.push_back("agreement on newstack's morebuf (DWARF fbreg " + std::to_string(proof->fbreg) + ", " +
                         f->morebuf_code_source + ")");
  f->morebuf_source += code.found ? "; the code proves the same slot" : "; " + f->morebuf_code_source;
}

void CollectSpDeltas(const sym::GoPclntab& go, GoBinaryFacts* f) {
  for (size_t i = 0; i < go.num_funcs(); i++) {
    auto fn = go.FuncAt(i);
    if (!fn.ok()) continue;
    auto runs = go.SpDeltaRuns(*fn);
    if (!runs.ok()) continue;
    for (const auto& r : *runs) {
      if (r.pc < f->text_start || r.pc - f->text_start > UINT32_MAX) continue;
      uint32_t off = static_cast<uint32_t>(r.pc - f->text_start);
      if (!f->sp_deltas.empty()) {
        auto& last = f->sp_deltas.back();
        if (off < last.pc_off) continue;  // keep the array sorted whatever the table says
        if (last.delta == r.delta) continue;
        if (last.pc_off == off) {
          last.delta = r.delta;
          continue;
        }
      }
      f->sp_deltas.push_back(sb_sp_delta{off, r.delta});
    }
  }
}

// The layout runtime/pprof gives g.labels in this release (see ebpf/unwind/goroutine_labels.h).
void ChooseLabelsLayout(GoBinaryFacts* f) {
  std::string field_source = "none";
  for (const auto& fc : f->offset_fields)
    if (fc.name == "g.labels") field_source = fc.source;
  if (f->offsets.g_labels == 0xffff) {
    f->labels_source = "none: g.labels offset unknown (no DWARF, no runtime/pprof code, no table for this release)";
    return;
  }
  std::string where = "g.labels +" + std::to_string(f->offsets.g_labels) + " (" + field_source + "), ";
  if (f->go_minor >= 19 && f->go_minor <= 23) {
    f->labels_layout = SB_PI_LABELS_HMAP;
    f->labels_source = where + "map[string]string (go1.19-1.23)";
  } else if (f->go_minor >= 24 && f->go_minor <= 27) {
    f->labels_layout = SB_PI_LABELS_SLICE;
    f->labels_source = where + "sorted key/value slice (go1.24+)";
  } else {
    f->labels_source = "none: label layout not checked for " + (f->go_version.empty() ? "an unknown Go version" : f->go_version);
  }
}

}  // namespace

Result<std::shared_ptr<const GoBinaryFacts>> AnalyzeGoBinary(const sym::Binary& bin,
                                                             const std::string& path,
                                                             const std::string& local_file) {
  const sym::GoPclntab* go = bin.go();
  if (go == nullptr) return MakeError(path + ": not a Go binary (no .gopclntab)");
  auto f = std::make_shared<GoBinaryFacts>();
  f->path = path;
  f->build_id = bin.build_id();
  f->arch = bin.elf().arch();
  f->pie = bin.elf().type() == ET_DYN;

  if (go->num_funcs() > 0) {
    auto first = go->FuncAt(0);
    auto last = go->FuncAt(go->num_funcs() - 1);
    if (first.ok() && last.ok()) {
      f->text_start = first->entry;
      f->text_end = last->end;
    }
  }

  if (const auto* bi = bin.build_info()) {
    f->go_version = bi->go_version;
    if (bi->major == 1) f->go_minor = bi->minor;
  }
  if (f->go_version.empty()) {
    // No .go.buildinfo: the runtime's own copy of the version string.
    if (auto rv = GoVersionFromRuntime(bin); rv.ok()) {
      f->go_version = rv->version;
      f->go_version_source = rv->source;
      if (rv->major == 1) f->go_minor = rv->minor;
    } else {
      f->missing.push_back("Go version (no build info; " + rv.error() + ")");
    }
  } else {
    f->go_version_source = ".go.buildinfo";
  }

  // Offsets: DWARF, then the runtime's own code, then the table of the version (if known).
  auto table = GoOffsetsForVersion(1, f->go_minor);
  auto dwarf = GoOffsetsFromDwarf(local_file.empty() ? path : local_file);
  AsmOffsets asm_facts = DeriveOffsetsFromAsm(bin);
  OffsetChoice choice = ChooseOffsets(f->arch, dwarf, asm_facts, table, f->go_version);
  f->has_offsets = choice.complete;
  f->offsets = choice.offsets;
  f->offsets_source = choice.summary;
  f->offset_fields = choice.fields;
  f->asm_conflicts = asm_facts.conflicts;
  if (!choice.complete) f->missing.push_back("runtime struct offsets (" + choice.summary + ")");
  ChooseLabelsLayout(f.get());

  if (f->arch == sym::Arch::kArm64) {
    // Go code keeps g in R28; the TLS copy is written only when runtime.iscgo is 1 (cgo, or a
    // C-created thread), which the unwinder checks in the process's memory.
    auto slot = FindArm64TlsSlot(bin, asm_facts);
    if (slot.ok()) {
      f->has_tls = true;
      f->tls_g_offset = slot->tls.offset;
      f->tls_source = slot->tls.source;
      f->has_iscgo = true;
      f->iscgo_addr = slot->iscgo_addr;
      f->iscgo_source = slot->iscgo_source;
    } else {
      f->tls_source = "R28 only (TLS copy unusable: " + slot.error() + ")";
    }
  } else if (auto tls = FindTlsSlot(bin); tls.ok()) {
    f->has_tls = true;
    f->tls_g_offset = tls->offset;
    f->tls_source = tls->source;
  } else {
    f->tls_source = "none: " + tls.error();
    f->missing.push_back("TLS slot of g");
  }

  // How systemstack/asmcgocall are crossed (DESIGN.md): amd64 before 1.21 from curg.sched.sp,
  // arm64 before 1.25 from the frame record at curg.sched.bp, later by frame pointers alone.
  f->systemstack_sched_recipe = f->arch == sym::Arch::kAmd64 && f->go_minor > 0 && f->go_minor < 21;
  f->switch_sched_bp_recipe = f->arch == sym::Arch::kArm64 && f->go_minor > 0 && f->go_minor < 25;
  // amd64 mcall calls its callee on g0 with BP unchanged: in Go 1.19 its caller's frame pointer
  // (mcall has no frame; it stores BP as gobuf.bp), in 1.21-1.24 its own frame pointer (it has a
  // frame and stores *BP as gobuf.bp), 0 from 1.25 (it clears BP first). Only the releases whose
  // mcall SwitchWindows decodes get a flag: Go 1.20 (never built here) is not checked.
  if (f->arch == sym::Arch::kAmd64 && f->go_minor == 19) f->mcall_link = SB_PI_MCALL_LINK_BP;
  if (f->arch == sym::Arch::kAmd64 && f->go_minor >= 21 && f->go_minor <= 24) f->mcall_link = SB_PI_MCALL_LINK_FRAME;
  CollectRanges(bin, local_file.empty() ? path : local_file, f.get());
  CollectSpDeltas(*go, f.get());
  f->pcsp = unwind::BuildPcspTable(f->sp_deltas, f->text_end - f->text_start);
  CollectSavePoints(bin, f.get());
  CollectNewstackMorebuf(bin, local_file.empty() ? path : local_file, f.get());
  f->gogo = FindGogoWindow(bin);
  if (!f->gogo.found) f->missing.push_back("gogo's windows (" + f->gogo.why + "): samples inside gogo may end with bad_fp");
  f->systemstack = FindSystemstackWindow(bin);
  if (!f->systemstack.found)
    f->missing.push_back("systemstack's windows (" + f->systemstack.why +
                         "): samples inside systemstack's switch may end with end_of_chain");
  f->asmcgocall = FindAsmcgocallWindow(bin);
  if (!f->asmcgocall.found && f->arch == sym::Arch::kAmd64)
    f->missing.push_back("asmcgocall's windows (" + f->asmcgocall.why +
                         "): samples inside asmcgocall's switch may show a stray frame");
  for (auto [paths, name] : {std::pair{&f->systemstack_paths, "runtime.systemstack"},
                             std::pair{&f->asmcgocall_paths, "runtime.asmcgocall"}}) {
    *paths = FindSwitchPaths(bin, name);
    if (!paths->found)
      f->missing.push_back(std::string(name) + "'s direct path (" + paths->why +
                           "): a frame of it on g0 is crossed wherever it is");
  }
  // clone's child: its own code is a new thread's root (a range like mstart's); on amd64 the
  // code it shares with the parent is told apart in the core by the TLS g (sb_clone_child).
  f->clone = FindCloneChild(bin);
  if (f->clone.found)
    f->ranges.push_back(FuncRange{"runtime.clone (child)", f->clone.child_lo, f->clone.child_hi, SB_FN_ROOT, 0, ""});
  else
    f->missing.push_back("runtime.clone's child (" + f->clone.why + "): a new thread's first samples may stop early or "
                         "show the parent's frames");
  CollectFramelessCallers(bin, f.get());
  return std::shared_ptr<const GoBinaryFacts>(f);
}

sb_proc_info MakeProcInfo(const GoBinaryFacts& facts, uint64_t bias, uint32_t delta_first) {
  sb_proc_info pi{};
  pi.flags = SB_PI_GO;
  if (facts.has_offsets) pi.flags |= SB_PI_HAS_OFFSETS;
  if (facts.has_tls) pi.flags |= SB_PI_HAS_TLS;
  if (facts.systemstack_sched_recipe) pi.flags |= SB_PI_SYSTEMSTACK_SCHED;
  if (facts.switch_sched_bp_recipe) pi.flags |= SB_PI_SWITCH_SCHED_BP;
  pi.flags |= facts.mcall_link;
  pi.flags |= facts.labels_layout;
  pi.arch = facts.arch == sym::Arch::kArm64 ? SB_ARCH_ARM64 : SB_ARCH_AMD64;
  pi.text_start = facts.text_start + bias;
  pi.text_end = facts.text_end + bias;
  pi.tls_g_offset = facts.tls_g_offset;
  if (facts.has_iscgo) {
    pi.flags |= SB_PI_HAS_ISCGO;
    pi.iscgo_addr = facts.iscgo_addr + bias;
  }
  pi.delta_first = delta_first;
  unwind::SetPcspIndex(&pi, facts.pcsp);
  pi.go_minor = static_cast<uint32_t>(facts.go_minor);
  pi.off = facts.offsets;
  for (const auto& r : facts.ranges) {
    if (pi.nranges >= SB_MAX_RANGES) break;
    pi.ranges[pi.nranges++] =
        sb_range{r.start + bias, r.end + bias, static_cast<uint32_t>(r.kind), static_cast<uint32_t>(r.slot_offset)};
  }
  if (facts.morestack) pi.morestack = facts.morestack + bias;
  if (facts.morestack_noctxt) pi.morestack_noctxt = facts.morestack_noctxt + bias;
  if (facts.systemstack_switch_start) {
    pi.sswitch_start = facts.systemstack_switch_start + bias;
    pi.sswitch_end = facts.systemstack_switch_end + bias;
  }
  for (uint64_t site : facts.mcall_return_sites) {
    if (pi.nmcall_sites >= SB_MAX_MCALL_SITES) break;
    if (site < facts.text_start || site - facts.text_start > UINT32_MAX) continue;
    uint32_t i = pi.nmcall_sites++;
    pi.mcall_sites[i] = static_cast<uint32_t>(site - facts.text_start);
    for (const auto& c : facts.mcall_callees) {
      if (c.site != site || c.fn_end == 0 || c.fn_entry < facts.text_start || c.fn_end - facts.text_start > UINT32_MAX)
        continue;
      pi.mcall_fns[i] = sb_mcall_fn{static_cast<uint32_t>(c.fn_entry - facts.text_start),
                                    static_cast<uint32_t>(c.fn_end - facts.text_start)};
    }
  }
  if (facts.gogo.found) {
    pi.gogo_g0_lo = facts.gogo.g0_lo + bias;
    pi.gogo_g0_hi = facts.gogo.g0_hi + bias;
    pi.gogo_gp_lo = facts.gogo.gp_lo + bias;
    pi.gogo_gp_hi = facts.gogo.gp_hi + bias;
    pi.gogo_bp_loaded = facts.gogo.bp_loaded + bias;
    if (facts.gogo.lr_loaded != 0) {
      pi.gogo_lr_loaded = facts.gogo.lr_loaded + bias;
      pi.save_g_lo = facts.gogo.save_g_lo + bias;
      pi.save_g_hi = facts.gogo.save_g_hi + bias;
    }
    for (const auto& c : facts.gogo.callers) {
      if (pi.ngogo_callers >= SB_MAX_GOGO_CALLERS) break;
      if (c.entry < facts.text_start || c.site - facts.text_start > UINT32_MAX) continue;
      pi.gogo_callers[pi.ngogo_callers++] = sb_gogo_caller{static_cast<uint32_t>(c.entry - facts.text_start),
                                                            static_cast<uint32_t>(c.site - facts.text_start)};
    }
  }
  if (facts.systemstack.found) {
    pi.sstack_g0_lo = facts.systemstack.g0_lo + bias;
    pi.sstack_g0_hi = facts.systemstack.g0_hi + bias;
    pi.sstack_gp_lo = facts.systemstack.gp_lo + bias;
    pi.sstack_gp_hi = facts.systemstack.gp_hi + bias;
    if (facts.systemstack.save_g_hi != 0 && pi.save_g_hi == 0) {  // arm64: the same save_g as gogo's
      pi.save_g_lo = facts.systemstack.save_g_lo + bias;
      pi.save_g_hi = facts.systemstack.save_g_hi + bias;
    }
  }
  if (facts.asmcgocall.found) {
    pi.acgo_g0_lo = facts.asmcgocall.g0_lo + bias;
    pi.acgo_g0_hi = facts.asmcgocall.g0_hi + bias;
    pi.acgo_gp_lo = facts.asmcgocall.gp_lo + bias;
    pi.acgo_gp_hi = facts.asmcgocall.gp_hi + bias;
  }
  auto offset = [&](uint64_t a) { return static_cast<uint32_t>(a - facts.text_start); };
  for (auto [paths, lo, hi] : {std::tuple{&facts.systemstack_paths, &pi.sstack_switched_lo, &pi.sstack_direct_lo},
                               std::tuple{&facts.asmcgocall_paths, &pi.acgo_switched_lo, &pi.acgo_direct_lo}}) {
    if (!paths->found || paths->switched_lo <= facts.text_start || paths->direct_lo - facts.text_start > UINT32_MAX)
      continue;
    *lo = offset(paths->switched_lo);
    *hi = offset(paths->direct_lo);
  }
  if (pi.acgo_direct_lo != 0 && facts.asmcgocall_paths.entry_sp_slot >= 0)
    pi.acgo_entry_sp_slot = static_cast<uint32_t>(facts.asmcgocall_paths.entry_sp_slot + 1);
  if (facts.clone.found && facts.clone.shared_hi != 0) {  // amd64 only
    pi.clone_shared_lo = facts.clone.shared_lo + bias;
    pi.clone_shared_hi = facts.clone.shared_hi + bias;
  }
  if (facts.newstack_morebuf_hi > facts.newstack_morebuf_lo && facts.newstack_morebuf_lo > facts.text_start &&
      facts.newstack_morebuf_hi - facts.text_start <= UINT32_MAX) {
    pi.newstack_lo = static_cast<uint32_t>(facts.newstack_morebuf_lo - facts.text_start);
    pi.newstack_hi = static_cast<uint32_t>(facts.newstack_morebuf_hi - facts.text_start);
    pi.morebuf_cfa_off = facts.morebuf_cfa_off;
    pi.gobuf_g = facts.gobuf_g;
  }
  unwind::SetProcInfoSpans(&pi);  // ranges sorted, the span tests' bounds
  return pi;
}

}  // namespace sb::unwinder
