// `switchback inspect BINARY`: what the unwinder knows about a Go executable, and where each
// fact came from.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "symbolizer/binary.h"
#include "tools/switchback/commands.h"
#include "unwinder/go_binary_facts.h"

namespace sb::cli {
namespace {

struct InspectArgs {
  std::string path;
  bool json = false;
  std::vector<std::string> funcs;  // --func NAME: print only these functions' pclntab ranges
};

// `--func NAME`: "NAME 0xENTRY 0xEND" per function, from pclntab (binaries without a symbol
// table too): where the coredump capture scripts put gdb breakpoints in such binaries.
int PrintFuncs(const sym::Binary& bin, const std::vector<std::string>& names) {
  const sym::GoPclntab* go = bin.go();
  if (go == nullptr) {
    fprintf(stderr, "switchback inspect: not a Go binary (no .gopclntab)\n");
    return 1;
  }
  int rc = 0;
  for (const auto& n : names) {
    auto fn = go->FindFuncByName(n);
    if (!fn) {
      fprintf(stderr, "switchback inspect: no function %s\n", n.c_str());
      rc = 1;
      continue;
    }
    printf("%s 0x%llx 0x%llx\n", n.c_str(), (unsigned long long)fn->entry, (unsigned long long)fn->end);
  }
  return rc;
}

int RunInspect(const InspectArgs& a) {
  auto bin = sym::Binary::Load(a.path);
  if (!bin.ok()) {
    fprintf(stderr, "switchback inspect: %s\n", bin.error().c_str());
    return 1;
  }
  if (!a.funcs.empty()) return PrintFuncs(**bin, a.funcs);
  auto facts = unwinder::AnalyzeGoBinary(**bin, a.path);
  if (!facts.ok()) {
    fprintf(stderr, "switchback inspect: %s\n", facts.error().c_str());
    return 1;
  }
  const auto& f = **facts;
  nlohmann::json j;
  j["path"] = f.path;
  j["arch"] = sym::ArchName(f.arch);
  j["go_version"] = f.go_version;
  j["go_version_source"] = f.go_version_source;
  j["pie"] = f.pie;
  j["build_id"] = f.build_id;
  j["text"] = {{"start", f.text_start}, {"end", f.text_end}};
  j["offsets"] = {{"source", f.offsets_source}, {"known", f.has_offsets}};
  // Every field: the value used, where it came from, each source's value, and whether the
  // sources that are present agree.
  nlohmann::json fields = nlohmann::json::array();
  for (const auto& fc : f.offset_fields) {
    nlohmann::json e = {{"name", fc.name}, {"source", fc.source}, {"agree", fc.agree}, {"needed", fc.needed}};
    e["value"] = fc.value >= 0 ? nlohmann::json(fc.value) : nlohmann::json(nullptr);
    if (fc.dwarf) e["dwarf"] = *fc.dwarf;
    if (fc.asm_value) e["asm"] = {{"value", *fc.asm_value}, {"functions", fc.asm_source}};
    if (fc.table) e["table"] = *fc.table;
    fields.push_back(e);
  }
  j["offsets"]["fields"] = fields;
  j["offsets"]["asm_conflicts"] = f.asm_conflicts;
  j["labels"] = {{"known", f.labels_layout != 0}, {"source", f.labels_source}};
  j["tls"] = {{"known", f.has_tls}, {"g_offset", f.tls_g_offset}, {"source", f.tls_source}};
  if (f.arch == sym::Arch::kArm64)
    j["tls"]["iscgo"] = {{"known", f.has_iscgo}, {"address", f.iscgo_addr}, {"source", f.iscgo_source}};
  j["systemstack_recipe"] = f.systemstack_sched_recipe ? "curg.sched.sp (amd64 < go1.21)"
                            : f.switch_sched_bp_recipe ? "frame record at curg.sched.bp (arm64 < go1.25)"
                                                       : "frame pointers";
  nlohmann::json ranges = nlohmann::json::array();
  for (const auto& r : f.ranges) {
    nlohmann::json e = {{"name", r.name}, {"start", r.start}, {"end", r.end}};
    if (r.kind == SB_FN_MCALL_SPILLER) e["g0_slot"] = {{"offset", r.slot_offset}, {"source", r.slot_source}};
    if (r.kind == SB_FN_FRAMELESS_CALLER) e["frameless_caller"] = true;
    ranges.push_back(e);
  }
  j["functions"] = ranges;
  j["newstack_morebuf"] = {{"proven", f.newstack_morebuf_hi != 0},
                           {"source", f.morebuf_source},
                           {"from_code", f.morebuf_code_source}};
  if (f.newstack_morebuf_hi != 0) {
    j["newstack_morebuf"]["start"] = f.newstack_morebuf_lo;
    j["newstack_morebuf"]["end"] = f.newstack_morebuf_hi;
    j["newstack_morebuf"]["cfa_offset"] = f.morebuf_cfa_off;
  }
  j["pcsp_runs"] = f.sp_deltas.size();
  j["missing"] = f.missing;
  if (a.json) {
    printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  printf("%s\n  arch %s, %s, %s\n", f.path.c_str(), sym::ArchName(f.arch),
         f.go_version.empty() ? "Go version unknown" : f.go_version.c_str(), f.pie ? "PIE" : "not PIE");
  printf("  build id    %s\n", f.build_id.c_str());
  if (!f.go_version_source.empty()) printf("  Go version  from %s\n", f.go_version_source.c_str());
  printf("  Go text     0x%llx-0x%llx, %zu pcsp runs\n", (unsigned long long)f.text_start,
         (unsigned long long)f.text_end, f.sp_deltas.size());
  printf("  offsets     %s\n", f.offsets_source.c_str());
  for (const auto& fc : f.offset_fields) {
    std::string others;
    if (fc.dwarf) others += fmt::format(" dwarf={}", *fc.dwarf);
    if (fc.asm_value) others += fmt::format(" asm={} ({})", *fc.asm_value, fc.asm_source);
    if (fc.table) others += fmt::format(" table={}", *fc.table);
    printf("    %-15s %5s  from %-8s %s%s%s\n", fc.name.c_str(), fc.value >= 0 ? std::to_string(fc.value).c_str() : "-",
           fc.source.rfind("asm:", 0) == 0 ? "asm" : fc.source.c_str(), fc.agree ? "agree:" : "DISAGREE:",
           others.c_str(), fc.optional ? "  (optional: goroutine labels)" : fc.needed ? "" : "  (not used on this arch)");
  }
  for (const auto& c : f.asm_conflicts) printf("    conflicting runtime code: %s\n", c.c_str());
  if (f.arch == sym::Arch::kArm64) {
    printf("  TLS g       %s\n", f.has_tls ? fmt::format("TPIDR_EL0{:+d} ({}), live while runtime.iscgo at 0x{:x} is 1 ({}); else R28",
                                                        f.tls_g_offset, f.tls_source, f.iscgo_addr, f.iscgo_source).c_str()
                                           : f.tls_source.c_str());
  } else {
    printf("  TLS g       %s\n", f.has_tls ? fmt::format("fs_base{:+d} ({})", f.tls_g_offset, f.tls_source).c_str()
                                           : f.tls_source.c_str());
  }
  printf("  labels      %s\n", f.labels_source.c_str());
  printf("  systemstack %s\n", j["systemstack_recipe"].get<std::string>().c_str());
  for (const auto& r : f.ranges)
    printf("  %-22s 0x%llx-0x%llx%s\n", r.name.c_str(), (unsigned long long)r.start, (unsigned long long)r.end,
           r.kind == SB_FN_MCALL_SPILLER
               ? fmt::format("  g0 slot at g0.sched.sp{:+d} ({})", r.slot_offset, r.slot_source).c_str()
           : r.kind == SB_FN_FRAMELESS_CALLER ? "  calls with no frame: its caller is stepped to by SP"
                                              : "");
  if (f.newstack_morebuf_hi != 0)
    printf("  newstack morebuf 0x%llx-0x%llx at CFA%+d (%s)\n", (unsigned long long)f.newstack_morebuf_lo,
           (unsigned long long)f.newstack_morebuf_hi, f.morebuf_cfa_off, f.morebuf_source.c_str());
  else if (!f.morebuf_source.empty())
    printf("  newstack morebuf %s\n", f.morebuf_source.c_str());
  if (f.gogo.found)
    printf("  gogo windows  on g0 0x%llx-0x%llx, on the goroutine 0x%llx-0x%llx (its BP from 0x%llx)\n",
           (unsigned long long)f.gogo.g0_lo, (unsigned long long)f.gogo.g0_hi, (unsigned long long)f.gogo.gp_lo,
           (unsigned long long)f.gogo.gp_hi, (unsigned long long)f.gogo.bp_loaded);
  for (const auto& m : f.missing) printf("  missing: %s\n", m.c_str());
  return 0;
}

}  // namespace

void AddInspectCommand(CLI::App& app, Runner* run) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Print the Go runtime facts switchback reads from an executable, with their source.");
  cmd->add_option("binary", args->path, "Go executable")->required();
  cmd->add_flag("--json", args->json, "print JSON");
  cmd->add_option("--func", args->funcs, "print NAME's address range from pclntab (repeatable)");
  cmd->callback([args, run] { *run = [args] { return RunInspect(*args); }; });
}

}  // namespace sb::cli
