#include "exitprobe/trace_plan.h"

#include <elf.h>

#include <regex>
#include <set>

#include <fmt/format.h>

#include "unwinder/go_binary_facts.h"

namespace sb::exitprobe {
namespace {

struct Candidate {
  std::string name;
  uint64_t start;
  uint64_t end;
};

Result<std::vector<std::regex>> CompilePatterns(const std::vector<std::string>& patterns) {
  std::vector<std::regex> out;
  for (const auto& p : patterns) {
    try {
      out.emplace_back(p, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return MakeError(fmt::format("bad --func pattern '{}': {}", p, e.what()));
    }
  }
  return out;
}

bool Matches(const std::vector<std::regex>& res, const std::string& name) {
  for (const auto& re : res)
    if (std::regex_search(name, re)) return true;
  return false;
}

Result<PlannedSite> Plan(const sym::ElfFile& elf, const CodeSite& site) {
  auto off = elf.VaddrToFileOffset(site.vaddr);
  if (!off) return MakeError(fmt::format("address {:#x} is not in a file-backed PT_LOAD", site.vaddr));
  return PlannedSite{site, *off};
}

// Adds one function to the plan, or to the skipped list with the reason.
void PlanFunc(const sym::ElfFile& elf, const Candidate& c, const PlanOptions& opts, bool uretprobe,
              TracePlan* plan) {
  auto code = elf.ReadVaddr(c.start, c.end - c.start);
  if (!code.ok()) {
    plan->skipped.push_back({c.name, "code not readable: " + code.error()});
    return;
  }
  CodeSites sites = FindCodeSites(plan->arch, *code, c.start, uretprobe ? EntryPlacement::kFirstInstruction
                                                                           : opts.placement);
  if (sites.first.vaddr != c.start) {
    plan->skipped.push_back({c.name, "its first instruction does not decode"});
    return;
  }
  FuncPlan f;
  f.name = c.name;
  f.start = c.start;
  f.end = c.end;
  f.entry_how = sites.entry_how;
  f.g_in_reg = plan->go && sites.g_stack_check;
  auto first = Plan(elf, sites.first);
  auto entry = Plan(elf, sites.entry);
  if (!first.ok() || !entry.ok()) {
    plan->skipped.push_back({c.name, !first.ok() ? first.error() : entry.error()});
    return;
  }
  f.first = *first;
  f.entry = *entry;
  if (!uretprobe) {
    if (sites.rets.empty()) {
      plan->skipped.push_back(
          {c.name, sites.decode_error ? "no RET found (undecodable bytes in the function)"
                                      : "no RET instruction (ends in a tail jump or a call that does not return)"});
      return;
    }
    for (const auto& r : sites.rets) {
      auto p = Plan(elf, r);
      if (!p.ok()) {
        plan->skipped.push_back({c.name, p.error()});
        return;
      }
      f.rets.push_back(*p);
    }
  }
  plan->funcs.push_back(std::move(f));
}

Status AddGoFacts(const sym::Binary& bin, const std::string& path, TracePlan* plan) {
  auto facts = unwinder::AnalyzeGoBinary(bin, path);
  if (!facts.ok()) return MakeError(facts.error());
  const auto& f = **facts;
  if (!f.has_offsets) return MakeError("no Go runtime offsets for " + path + ": " + f.offsets_source);
  plan->go_version = f.go_version;
  auto& c = plan->config;
  c.go = 1;
  c.g_stack_hi = f.offsets.g_stack_hi;
  c.g_m = f.offsets.g_m;
  c.g_sched_pc = f.offsets.g_sched + f.offsets.gobuf_pc;
  c.m_g0 = f.offsets.m_g0;
  c.m_curg = f.offsets.m_curg;
  plan->g_atomicstatus = f.offsets.g_atomicstatus;
  if (f.has_tls) c.tls_g_offset = f.tls_g_offset;
  plan->notes.push_back(fmt::format("g from {} (checked against g.m.curg), else {}; offsets: {}",
                                    plan->arch == sym::Arch::kArm64 ? "R28" : "R14",
                                    f.has_tls ? fmt::format("the TLS slot fs_base{:+d}", f.tls_g_offset)
                                              : "nothing (no TLS slot known)",
                                    f.offsets_source));
  return Status::Ok();
}

void AddHooks(const sym::Binary& bin, TracePlan* plan) {
  const auto* go = bin.go();
  for (auto [name, kind] : {std::pair<const char*, uint32_t>{"runtime.deferreturn", SB_XP_SWEEP},
                            {"runtime.goexit1", SB_XP_SWEEP_ALL}}) {
    auto fn = go->FindFuncByName(name);
    if (!fn) {
      plan->notes.push_back(fmt::format("{} not found: orphaned calls are found later", name));
      continue;
    }
    auto code = bin.elf().ReadVaddr(fn->entry, fn->end - fn->entry);
    if (!code.ok()) continue;
    CodeSites s = FindCodeSites(plan->arch, *code, fn->entry, EntryPlacement::kAuto);
    auto site = Plan(bin.elf(), s.entry);
    if (!site.ok()) continue;
    plan->hooks.push_back({name, kind, s.g_stack_check, *site});
  }
}

}  // namespace

size_t TracePlan::sites() const {
  size_t n = hooks.size();
  for (const auto& f : funcs) n += 1 + (uretprobe ? 1 : f.rets.size());
  return n;
}

Result<TracePlan> BuildTracePlan(const sym::Binary& bin, const std::string& path, const PlanOptions& opts) {
  auto res = CompilePatterns(opts.patterns.empty() ? std::vector<std::string>{"."} : opts.patterns);
  if (!res.ok()) return res.take_error();
  TracePlan plan;
  plan.path = path;
  plan.arch = bin.elf().arch();
  if (plan.arch != sym::Arch::kAmd64 && plan.arch != sym::Arch::kArm64)
    return MakeError(path + ": only amd64 and arm64 executables can be traced");
  plan.go = bin.go() != nullptr;
  plan.uretprobe = opts.uretprobe || !plan.go;
  if (!plan.go) plan.notes.push_back("not a Go binary: exits are timed with uretprobes (safe outside Go)");

  std::vector<Candidate> cands;
  if (plan.go) {
    if (auto st = AddGoFacts(bin, path, &plan); !st.ok()) return MakeError(st.error());
    const auto* go = bin.go();
    for (size_t i = 0; i < go->num_funcs(); i++) {
      auto f = go->FuncAt(i);
      if (!f.ok() || f->end <= f->entry) continue;
      std::string name(f->name);
      if (Matches(*res, name)) cands.push_back({name, f->entry, f->end});
    }
  } else {
    std::set<uint64_t> seen;  // .symtab and .dynsym name the same functions
    for (const auto& s : bin.elf().Symbols())
      if (s.type == STT_FUNC && s.size > 0 && s.value != 0 && Matches(*res, s.name) &&
          seen.insert(s.value).second)
        cands.push_back({s.name, s.value, s.value + s.size});
  }
  if (cands.empty()) return MakeError("no function of " + path + " matches the --func patterns");
  if (cands.size() > opts.max_funcs)
    return MakeError(fmt::format("{} functions match; at most {} can be traced at once (narrow --func or "
                                 "raise --max-funcs)",
                                 cands.size(), opts.max_funcs));
  for (const auto& c : cands) PlanFunc(bin.elf(), c, opts, plan.uretprobe, &plan);
  if (plan.go && !plan.uretprobe) AddHooks(bin, &plan);
  return plan;
}

}  // namespace sb::exitprobe
