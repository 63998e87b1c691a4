// Exit-probe figures for docs/performance.md, measured side by side in one run (rounds interleaved,
// medians printed), needs root:
//
//  (a) Per-call cost of tracing a tiny Go function (testdata/workloads/traced main.tiny: one
//      entry probe + one RET probe, pairing in BPF), with the entry probe on the function's
//      first instruction (CMPQ SP, 16(R14): single-stepped) and on the emulated site (the stack
//      check's JBE), against the bare cost of a uprobe running an empty BPF program on a NOP
//      and on a RET of a C function in this binary. Cost = traced - untraced CPU ns per call
//      (thread CPU time, user + system: wall time on a shared machine counts other tasks too).
//  (b) Attach and detach time for 1,000 functions of the traced workload (entry + every RET),
//      with one uprobe_multi link against one perf-event uprobe per site.
//
// Usage: exitprobe_bench WORKLOAD_BINARY [OUT.json]
// Environment: ROUNDS (5) and CALLS (200000; 0 skips part a) for (a); FUNCS (1000) and
// ATTACH_ROUNDS (1) for (b). Part (b) takes about 6 minutes: this kernel detaches perf-event
// uprobes one RCU grace period (~0.1 s) at a time, and closing them from many threads does not
// overlap those waits (tried).
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "exitprobe/trace_plan.h"
#include "exitprobe/tracer.h"
#include "exitprobe/uprobe_attach.h"
#include "symbolizer/binary.h"

// The C baseline: a NOP, then the body, then a RET. Probing the NOP costs an emulated trap,
// probing the RET a single-stepped one.
extern "C" int sb_bench_c_func(int);
asm(R"(
  .text
  .globl sb_bench_c_func
  .type sb_bench_c_func, @function
sb_bench_c_func:
  nop
  leal 1(%rdi), %eax
  ret
  .size sb_bench_c_func, .-sb_bench_c_func
)");

namespace {

using namespace sb;
using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int EnvInt(const char* name, int def) {
  const char* v = getenv(name);
  return v ? atoi(v) : def;
}

[[noreturn]] void Die(const std::string& msg) {
  fprintf(stderr, "exitprobe_bench: %s\n", msg.c_str());
  exit(1);
}

// CPU time of this thread (user + system, so the kernel's uprobe work is in): on a busy
// machine wall time would also count the time other tasks held the CPU.
double ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

double CLoopNs(int calls) {
  volatile int acc = 0;
  double t0 = ThreadCpuNs();
  for (int i = 0; i < calls; i++) acc = acc + sb_bench_c_func(i);
  return (ThreadCpuNs() - t0) / calls;
}

double GoLoopNs(const std::string& workload, int calls) {
  std::string cmd = fmt::format("'{}' -bench {}", workload, calls);
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) Die("cannot run " + cmd);
  double ns = -1;
  if (fscanf(p, "%lf", &ns) != 1) ns = -1;
  if (pclose(p) != 0 || ns < 0) Die("workload bench run failed: " + cmd);
  return ns;
}

exitprobe::TracePlan Plan(const std::string& path, const std::string& pattern, exitprobe::EntryPlacement placement) {
  auto bin = sym::Binary::Load(path);
  if (!bin.ok()) Die(bin.error());
  exitprobe::PlanOptions o;
  o.patterns = {pattern};
  o.placement = placement;
  o.max_funcs = 1000000;
  auto plan = exitprobe::BuildTracePlan(**bin, path, o);
  if (!plan.ok()) Die(plan.error());
  return *plan;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) Die("usage: exitprobe_bench WORKLOAD_BINARY [OUT.json]");
  if (auto why = exitprobe::BpfUnavailableReason(); !why.empty()) Die(why);
  std::string workload = argv[1];
  int rounds = EnvInt("ROUNDS", 5);
  int calls = EnvInt("CALLS", 200000);
  size_t nfuncs = static_cast<size_t>(EnvInt("FUNCS", 1000));
  int attach_rounds = EnvInt("ATTACH_ROUNDS", 1);

  // (a) per-call costs (CALLS=0 skips them).
  std::string self = "/proc/self/exe";
  auto self_plan = Plan(self, "^sb_bench_c_func$", exitprobe::EntryPlacement::kFirstInstruction);
  if (self_plan.funcs.size() != 1) Die("sb_bench_c_func not found in this binary");
  uint64_t nop_off = self_plan.funcs[0].first.file_offset;
  uint64_t ret_off = nop_off + 4;  // nop (1) + leal 1(%rdi),%eax (3)
  auto base_tracer = exitprobe::Tracer::Load(self_plan, {});
  if (!base_tracer.ok()) Die(base_tracer.error());
  auto go_first = Plan(workload, "^main\\.tiny$", exitprobe::EntryPlacement::kFirstInstruction);
  auto go_auto = Plan(workload, "^main\\.tiny$", exitprobe::EntryPlacement::kAuto);
  go_first.hooks.clear();  // main.tiny neither panics nor ends goroutines
  go_auto.hooks.clear();
  fprintf(stderr, "main.tiny: entry first %s (%s), auto %s (%s); %zu RET(s)\n", go_first.funcs[0].entry.code.text.c_str(),
          go_first.funcs[0].entry.code.emulated ? "emulated" : "single-stepped",
          go_auto.funcs[0].entry.code.text.c_str(), go_auto.funcs[0].entry.code.emulated ? "emulated" : "single-stepped",
          go_auto.funcs[0].rets.size());

  std::map<std::string, std::vector<double>> ns;
  for (int r = 0; calls > 0 && r < rounds; r++) {
    ns["c_untraced"].push_back(CLoopNs(calls));
    for (auto [name, off] : {std::pair<const char*, uint64_t>{"c_nop", nop_off}, {"c_ret", ret_off}}) {
      exitprobe::UprobeLinks l;
      if (auto st = l.Attach((*base_tracer)->noop_program(), exitprobe::AttachMethod::kPerfEvent, self,
                             static_cast<uint32_t>(getpid()), {{off, 0, false}});
          !st.ok())
        Die(st.error());
      ns[name].push_back(CLoopNs(calls));
    }
    ns["go_untraced"].push_back(GoLoopNs(workload, calls));
    for (auto* cfg : {&go_first, &go_auto}) {
      auto t = exitprobe::Tracer::Load(*cfg, {});
      if (!t.ok()) Die(t.error());
      auto a = (*t)->Attach();
      if (!a.ok() || !a->failed.empty()) Die("attach main.tiny failed");
      ns[cfg == &go_first ? "go_entry_first" : "go_entry_emulated"].push_back(GoLoopNs(workload, calls));
      auto counts = (*t)->ReadCounts();
      if (counts[0].exits != static_cast<uint64_t>(calls)) Die(fmt::format("main.tiny: {} exits for {} calls", counts[0].exits, calls));
    }
    fprintf(stderr, "round %d/%d done\n", r + 1, rounds);
  }
  double c_base = Median(ns["c_untraced"]), go_base = Median(ns["go_untraced"]);
  double c_nop = Median(ns["c_nop"]) - c_base, c_ret = Median(ns["c_ret"]) - c_base;
  double go_first_ns = Median(ns["go_entry_first"]) - go_base, go_auto_ns = Median(ns["go_entry_emulated"]) - go_base;
  double floor = c_nop + c_ret;  // the cheapest pair of traps: an emulated entry, a RET exit

  // (b) attach/detach of 1,000 functions.
  if (nfuncs == 0) nfuncs = 1;
  auto big = Plan(workload, ".", exitprobe::EntryPlacement::kAuto);
  big.hooks.clear();
  if (big.funcs.size() > nfuncs) big.funcs.resize(nfuncs);
  std::map<std::string, std::vector<double>> at, dt;
  size_t sites = big.sites();
  for (int r = 0; r < attach_rounds; r++) {
    for (bool perf : {false, true}) {
      exitprobe::TraceOptions o;
      o.force_perf_event = perf;
      auto t = exitprobe::Tracer::Load(big, o);
      if (!t.ok()) Die(t.error());
      auto a = (*t)->Attach();
      if (!a.ok()) Die(a.error());
      if (!a->failed.empty()) Die(a->failed[0].name + ": " + a->failed[0].reason);
      std::string key = perf ? "perf_event" : "uprobe_multi";
      at[key].push_back(a->seconds);
      dt[key].push_back((*t)->Detach());
      fprintf(stderr, "%s: %zu sites attached in %.3f s, detached in %.3f s\n", key.c_str(), a->sites, at[key].back(),
              dt[key].back());
    }
  }

  std::string table;
  table += fmt::format("Per-call cost in CPU time (median of {} rounds, {} calls each; traced minus untraced):\n",
                       rounds, calls);
  table += fmt::format("  {:<52} {:>9}  {:>6}\n", "", "ns/call", "ratio");
  table += fmt::format("  {:<52} {:>9.0f}  {:>6.2f}\n", "bare uprobe on a NOP (C, emulated)", c_nop, c_nop / floor);
  table += fmt::format("  {:<52} {:>9.0f}  {:>6.2f}\n", "bare uprobe on a RET (C, single-stepped)", c_ret, c_ret / floor);
  table += fmt::format("  {:<52} {:>9.0f}  {:>6.2f}\n", "NOP + RET: the cheapest entry/exit pair (= 1.00)", floor, 1.0);
  table += fmt::format("  {:<52} {:>9.0f}  {:>6.2f}\n", "Go main.tiny traced, entry on first instruction", go_first_ns,
                       go_first_ns / floor);
  table += fmt::format("  {:<52} {:>9.0f}  {:>6.2f}\n", "Go main.tiny traced, entry on the stack-check JBE", go_auto_ns,
                       go_auto_ns / floor);
  table += fmt::format("  (untraced: C {:.1f} ns/call, Go {:.1f} ns/call)\n", c_base, go_base);
  table += fmt::format("\nAttach / detach of {} functions ({} sites), median of {} rounds:\n", big.funcs.size(), sites,
                       at["uprobe_multi"].size());
  for (const char* k : {"uprobe_multi", "perf_event"})
    table += fmt::format("  {:<14} attach {:8.3f} s   detach {:8.3f} s\n", k, Median(at[k]), Median(dt[k]));
  table += fmt::format("  ratio perf_event / uprobe_multi: attach {:.1f}x, detach {:.1f}x\n",
                       Median(at["perf_event"]) / Median(at["uprobe_multi"]),
                       Median(dt["perf_event"]) / Median(dt["uprobe_multi"]));
  fputs(table.c_str(), stdout);

  if (argc > 2) {
    nlohmann::json j;
    j["rounds"] = rounds;
    j["calls"] = calls;
    j["ns_per_call"] = {{"c_nop", c_nop}, {"c_ret", c_ret}, {"go_entry_first", go_first_ns},
                        {"go_entry_emulated", go_auto_ns}, {"c_untraced", c_base}, {"go_untraced", go_base}};
    j["ratio_to_nop_plus_ret"] = {{"go_entry_first", go_first_ns / floor}, {"go_entry_emulated", go_auto_ns / floor}};
    j["attach_1000"] = {{"functions", big.funcs.size()}, {"sites", sites},
                        {"uprobe_multi", {{"attach_s", Median(at["uprobe_multi"])}, {"detach_s", Median(dt["uprobe_multi"])}}},
                        {"perf_event", {{"attach_s", Median(at["perf_event"])}, {"detach_s", Median(dt["perf_event"])}}}};
    std::ofstream(argv[2]) << j.dump(2) << "\n";
  }
  return 0;
}
