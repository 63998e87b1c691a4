#include "unwinder/go_binary_facts.h"

#include <elf.h>

#include "unwinder/go_offsets_table.h"
#include "unwinder/tls_slot.h"

namespace sb::unwinder {
namespace {

struct NamedKind {
  const char* name;
  sb_func_kind kind;
};

// Functions the unwinder must recognise, by their pclntab names (stable across versions,
// unlike funcID numbers). Roots are the runtime's TOPFRAME functions.
constexpr NamedKind kSpecialFunctions[] = {
    {"runtime.goexit", SB_FN_ROOT},
    {"runtime.mstart", SB_FN_ROOT},
    {"runtime.rt0_go", SB_FN_ROOT},
    {"runtime.sigtramp", SB_FN_ROOT},
    {"runtime.cgoSigtramp", SB_FN_ROOT},
    {"runtime.systemstack", SB_FN_SYSTEMSTACK},
    {"runtime.mcall", SB_FN_MCALL},
    {"runtime.morestack", SB_FN_MORESTACK},
    {"runtime.asmcgocall", SB_FN_ASMCGOCALL},
    {"runtime.asyncPreempt", SB_FN_ASYNCPREEMPT},
};

// mcall callees that spill their g argument to the caller's arg slot (g0.sched.sp - 8) on
// arm64, per DESIGN.md (checked against the callees' DWARF for Go 1.19: `gp` at DW_OP_fbreg 8).
// goexit0, gosched_m and gopreempt_m do not: after dropg their goroutine cannot be found.
constexpr const char* kArm64SpillingMcallCallees[] = {
    "runtime.park_m", "runtime.preemptPark", "runtime.exitsyscall0", "runtime.goyield_m",
    "runtime.goschedguarded_m"};

void CollectRanges(const sym::GoPclntab& go, GoBinaryFacts* f) {
  if (f->arch == sym::Arch::kArm64) {
    for (const char* name : kArm64SpillingMcallCallees)
      if (auto fn = go.FindFuncByName(name))
        f->ranges.push_back(FuncRange{name, fn->entry, fn->end, SB_FN_MCALL_SPILLER});
  }
  for (const auto& s : kSpecialFunctions) {
    auto fn = go.FindFuncByName(s.name);
    if (!fn) {
      // sigtramp variants and rt0_go are absent in some link modes; the rest are required.
      if (s.kind != SB_FN_ROOT) f->missing.push_back(std::string("function ") + s.name);
      continue;
    }
    f->ranges.push_back(FuncRange{s.name, fn->entry, fn->end, s.kind});
  }
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

}  // namespace

Result<std::shared_ptr<const GoBinaryFacts>> AnalyzeGoBinary(const sym::Binary& bin,
                                                             const std::string& path) {
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
  if (f->go_version.empty()) f->missing.push_back("Go version (no build info)");

  if (auto off = GoOffsetsForVersion(1, f->go_minor)) {
    f->has_offsets = true;
    f->offsets = *off;
    f->offsets_source = "version table (" + f->go_version + ")";
  } else {
    f->offsets_source = f->go_version.empty() ? "none: Go version unknown"
                                              : "none: no verified offsets for " + f->go_version;
    f->missing.push_back("runtime struct offsets");
  }

  if (f->arch == sym::Arch::kArm64) {
    // Go code keeps g in R28 (C code preserves it: callee-saved); the TLS copy exists only in
    // cgo binaries and is not needed to find g.
    f->tls_source = "R28 (arm64 g register)";
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
  CollectRanges(*go, f.get());
  CollectSpDeltas(*go, f.get());
  return std::shared_ptr<const GoBinaryFacts>(f);
}

sb_proc_info MakeProcInfo(const GoBinaryFacts& facts, uint64_t bias, uint32_t delta_first) {
  sb_proc_info pi{};
  pi.flags = SB_PI_GO;
  if (facts.has_offsets) pi.flags |= SB_PI_HAS_OFFSETS;
  if (facts.has_tls) pi.flags |= SB_PI_HAS_TLS;
  if (facts.systemstack_sched_recipe) pi.flags |= SB_PI_SYSTEMSTACK_SCHED;
  if (facts.switch_sched_bp_recipe) pi.flags |= SB_PI_SWITCH_SCHED_BP;
  pi.arch = facts.arch == sym::Arch::kArm64 ? SB_ARCH_ARM64 : SB_ARCH_AMD64;
  pi.text_start = facts.text_start + bias;
  pi.text_end = facts.text_end + bias;
  pi.tls_g_offset = facts.tls_g_offset;
  pi.delta_first = delta_first;
  pi.delta_count = static_cast<uint32_t>(facts.sp_deltas.size());
  pi.go_minor = static_cast<uint32_t>(facts.go_minor);
  pi.off = facts.offsets;
  for (const auto& r : facts.ranges) {
    if (pi.nranges >= SB_MAX_RANGES) break;
    pi.ranges[pi.nranges++] = sb_range{r.start + bias, r.end + bias, static_cast<uint32_t>(r.kind), 0};
  }
  return pi;
}

}  // namespace sb::unwinder
