// `switchback trace`: latency distributions of chosen functions of a running program, through a
// uprobe at each function's entry and one at each of its RET instructions (exitprobe/).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "base/file_util.h"
#include "ebpf/unwind/host_unwind.h"
#include "exitprobe/call_paths.h"
#include "exitprobe/process_image.h"
#include "recorder/process_tracker.h"
#include "unwinder/go_binary_facts.h"
#include "exitprobe/report.h"
#include "exitprobe/trace_plan.h"
#include "exitprobe/tracer.h"
#include "profile/writers.h"
#include "symbolizer/binary.h"
#include "tools/switchback/commands.h"

namespace sb::cli {
namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

struct TraceArgs {
  uint32_t pid = 0;
  std::string binary;
  std::vector<std::string> funcs;
  double duration = 0;
  std::string json;
  std::string pprof;
  std::string entry = "auto";
  bool verbose = false;
  bool quiet = false;
  bool no_histograms = false;
  bool uretprobe = false;
  bool allow_unsafe_uretprobe = false;
  bool perf_event = false;
  uint32_t max_pending = 65536;
  size_t max_funcs = 20000;
  bool stacks = false;
  std::string slower_than;
  bool no_labels = false;
  size_t top_paths = 5;
};

// "250us", "5ms", "1.5s", "800ns"; a plain number is nanoseconds. nullopt when malformed.
std::optional<uint64_t> ParseDuration(const std::string& s) {
  size_t end = 0;
  double v = 0;
  try {
    v = std::stod(s, &end);
  } catch (...) {
    return std::nullopt;
  }
  std::string unit = s.substr(end);
  double mul = unit.empty() || unit == "ns" ? 1 : unit == "us" || unit == "µs" ? 1e3 : unit == "ms" ? 1e6 : unit == "s" ? 1e9 : -1;
  if (mul < 0 || v < 0 || v * mul > 1e18) return std::nullopt;
  return static_cast<uint64_t>(v * mul);
}

int Fail(const std::string& msg) {
  fprintf(stderr, "switchback trace: %s\n", msg.c_str());
  return 1;
}

// A zombie (exited, not yet reaped by its parent) counts as gone.
bool ProcessAlive(uint32_t pid) {
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return false;
  auto st = ReadFile(fmt::format("/proc/{}/stat", pid));
  if (!st.ok()) return false;
  const std::string& stat = *st;
  size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] != 'Z';
}

int RunTrace(const TraceArgs& a) {
  for (const std::string* path : {&a.json, &a.pprof}) {
    if (path->empty()) continue;
    if (auto st = CheckWritable(*path); !st.ok()) return Fail(st.error());
  }
  std::string path = a.binary;
  if (a.pid) {
    path = fmt::format("/proc/{}/exe", a.pid);
    if (!ProcessAlive(a.pid)) return Fail(fmt::format("no process {}", a.pid));
  }
  auto bin = sym::Binary::Load(path);
  if (!bin.ok()) return Fail(bin.error());

  exitprobe::PlanOptions popts;
  popts.patterns = a.funcs;
  if (popts.patterns.empty()) popts.patterns = {(*bin)->go() ? "^main\\." : "."};
  popts.placement = a.entry == "first" ? exitprobe::EntryPlacement::kFirstInstruction : exitprobe::EntryPlacement::kAuto;
  popts.uretprobe = a.uretprobe;
  popts.max_funcs = a.max_funcs;
  if (a.uretprobe && (*bin)->go() && !a.allow_unsafe_uretprobe)
    return Fail("refusing uretprobes on a Go binary: the kernel rewrites return addresses on the stack and Go "
                "dies with 'fatal error: unknown caller pc' when it copies that stack (add "
                "--allow-unsafe-uretprobe to see it happen)");
  auto plan = exitprobe::BuildTracePlan(**bin, path, popts);
  if (!plan.ok()) return Fail(plan.error());
  if (a.verbose) fputs(exitprobe::SitesText(*plan).c_str(), stderr);
  if (plan->funcs.empty()) {
    for (const auto& s : plan->skipped) fprintf(stderr, "  %s: %s\n", s.name.c_str(), s.reason.c_str());
    return Fail("none of the matching functions can be traced");
  }

  exitprobe::TraceOptions topts;
  topts.pid = a.pid;
  topts.force_perf_event = a.perf_event;
  topts.max_pending = a.max_pending;
  // --stacks: the runtime facts the unwind core needs, as `record` hands them to the sampler.
  sym::BinaryCache cache;
  recorder::ProcessTracker tracker(&cache, nullptr);
  std::string stacks_note;
  std::shared_ptr<const unwinder::GoBinaryFacts> stack_facts;
  if (a.stacks) {
    if (!(*bin)->go()) return Fail("--stacks needs a Go binary (the unwinder walks Go stacks)");
    if (plan->uretprobe) return Fail("--stacks needs exit probes on the RETs, not uretprobes");
    auto slow = ParseDuration(a.slower_than.empty() ? "0" : a.slower_than);
    if (!slow) return Fail("--slower-than: not a duration: '" + a.slower_than + "' (e.g. 500us, 5ms, 1s)");
    topts.stacks = true;
    topts.slower_than_ns = *slow;
    topts.labels = !a.no_labels;
    std::shared_ptr<const unwinder::GoBinaryFacts> facts;
    if (a.pid) {
      auto p = tracker.Track(a.pid, true);
      if (!p.ok()) return Fail(p.error());
      facts = (*p)->facts;
      sb_proc_info info = unwinder::MakeProcInfo(*facts, (*p)->bias, 0);
      for (const auto& m : (*p)->maps)
        if (m.path == "[vdso]") {
          info.vdso_start = m.start;
          info.vdso_end = m.end;
        }
      topts.procs.push_back({a.pid, info});
    } else {
      auto f = unwinder::AnalyzeGoBinary(**bin, path);
      if (!f.ok()) return Fail(f.error());
      facts = *f;
      // Link-time addresses are the runtime ones for every process of a non-PIE binary; a PIE
      // one is loaded elsewhere in each process: BPF relocates these facts for each process by
      // the load bias its first exit proves (exitprobe.bpf.c proc_facts_at).
      if (!facts->pie) topts.procs.push_back({0, unwinder::MakeProcInfo(*facts, 0, 0)});
      else topts.proc_template = unwinder::MakeProcInfo(*facts, 0, 0);
    }
    stack_facts = facts;
    if (!facts->has_offsets)
      stacks_note = "runtime offsets unknown for this binary: call paths stop at the first stack switch (no_offsets)";
    topts.sp_deltas = facts->pcsp.cells;
  }
  auto tracer = exitprobe::Tracer::Load(*plan, topts);
  if (!tracer.ok()) return Fail(tracer.error());
  auto attach = (*tracer)->Attach();
  if (!attach.ok()) return Fail(attach.error());

  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  bool tty = isatty(STDERR_FILENO) && !a.quiet;
  if (!a.quiet) {
    std::string who = a.pid ? fmt::format("process {}", a.pid) : "every process running " + a.binary;
    std::string until = a.duration > 0 ? fmt::format(" for {}s", a.duration) : " until Ctrl-C";
    fprintf(stderr, "switchback: tracing %zu functions (%zu sites, %s, attached in %.3fs) in %s%s\n",
            plan->funcs.size(), attach->sites, exitprobe::AttachMethodName(attach->method), attach->seconds,
            who.c_str(), until.c_str());
    for (const auto& f : attach->failed) fprintf(stderr, "  not attached: %s: %s\n", f.name.c_str(), f.reason.c_str());
  }

  exitprobe::CallPathAggregator paths;
  std::set<uint32_t> seen_pids;
  size_t adopted = 0;
  exitprobe::Tracer::StackFn on_stack = [&](const sb_xp_stack& ev) {
    // Symbolization needs the process's maps: read them while it runs. One that has exited
    // already is placed by the load bias its path carries (its executable's segments).
    if (seen_pids.insert(ev.s.pid).second) {
      bool gone = !tracker.Find(ev.s.pid) && !tracker.Track(ev.s.pid, true).ok();
      if (gone) {
        tracker.Adopt(exitprobe::ProcessFromLoadBias(ev.s.pid, path, *bin, stack_facts, ev.bias));
        adopted++;
      }
      if (!a.quiet && !a.pid)
        fprintf(stderr, "%sswitchback: call paths of process %u (%s, load bias 0x%llx)\n", tty ? "\r\033[K" : "", ev.s.pid,
                gone ? "exited already" : "running", static_cast<unsigned long long>(ev.bias));
    }
    paths.Add(ev);
  };
  if (!stacks_note.empty() && !a.quiet) fprintf(stderr, "switchback: %s\n", stacks_note.c_str());
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  bool process_gone = false;
  auto last_sweep = std::chrono::steady_clock::now();
  while (!g_stop.load()) {
    // Per-process facts of processes that exited leave the BPF map (a churn of short-lived
    // processes would fill it); a reused pid gets fresh ones from its first exit.
    if (topts.proc_template && std::chrono::steady_clock::now() - last_sweep > std::chrono::seconds(1)) {
      (*tracer)->ForgetProcesses([](uint32_t pid) { return !ProcessAlive(pid); });
      last_sweep = std::chrono::steady_clock::now();
    }
    if (a.duration > 0 && elapsed() >= a.duration) break;
    if (a.pid && !ProcessAlive(a.pid)) {
      process_gone = true;
      break;
    }
    if (a.stacks) {
      (*tracer)->PollStacks(100, on_stack);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (tty) {
      uint64_t calls = 0, exits = 0, aborted = 0;
      for (const auto& c : (*tracer)->ReadCounts()) {
        calls += c.calls;
        exits += c.exits;
        aborted += c.aborted;
      }
      fprintf(stderr, "\r\033[K[%6.1fs] calls %llu  exits %llu  aborted %llu  (Ctrl-C to stop)", elapsed(),
              static_cast<unsigned long long>(calls), static_cast<unsigned long long>(exits),
              static_cast<unsigned long long>(aborted));
      fflush(stderr);
    }
  }
  if (tty) fprintf(stderr, "\r\033[K");
  double duration = elapsed();
  // Detach first: the counts read afterwards are final.
  double detach_s = (*tracer)->Detach();
  if (a.stacks)
    while ((*tracer)->PollStacks(0, on_stack) > 0) {
    }
  auto report = exitprobe::BuildReport(*plan, (*tracer)->ReadCounts(), (*tracer)->ReadPending(),
                                       [&](uint32_t tgid, uint64_t g) {
                                         return exitprobe::ReadGoroutineStatus(tgid, g, plan->g_atomicstatus);
                                       });
  report.pid = a.pid;
  report.duration_s = duration;
  report.attach = *attach;
  report.detach_s = detach_s;
  report.counters = (*tracer)->ReadCounters();
  if (process_gone) report.notes.push_back("the process exited; calls pending then are counted in flight");
  if (!stacks_note.empty()) report.notes.push_back(stacks_note);
  // Never expected (the BPF side packs what userspace unpacks): named, so that a mismatch of the
  // two is seen, not only counted.
  if (uint64_t bad = (*tracer)->MalformedStacks()) {
    report.notes.push_back(fmt::format("{} call-path record(s) malformed and left out (the first: {})", bad,
                                       (*tracer)->FirstMalformedReason()));
    if (!a.quiet) fprintf(stderr, "switchback: %s\n", report.notes.back().c_str());
  }
  if (adopted)
    report.notes.push_back(fmt::format("{} process(es) exited before their call paths were read: symbolized from the "
                                       "load bias the paths carry (frames outside the executable unnamed)",
                                       adopted));

  exitprobe::CallPathReport cp;
  nlohmann::json json = exitprobe::ReportJson(report);
  for (const auto& [name, insns] : (*tracer)->VerifiedInsns()) json["bpf"]["verified_insns"][name] = insns;
  if (a.stacks) {
    std::vector<std::string> names;
    for (const auto& f : plan->funcs) names.push_back(f.name);
    cp = exitprobe::BuildCallPaths(paths, tracker, names);
    sb_counters uc = (*tracer)->ReadUnwindCounters();
    nlohmann::json stops = nlohmann::json::object();
    for (int i = 0; i < SB_STOP_MAX; i++)
      if (uc.stop[i]) stops[unwind::StopReasonName(i)] = uc.stop[i];
    json["paths"] = exitprobe::CallPathsJson(cp);
    json["stacks"] = {{"slower_than_ns", topts.slower_than_ns},  {"sent", report.counters.stack_sent},
                      {"faster", report.counters.stack_fast},     {"lost", report.counters.stack_lost},
                      {"malformed", (*tracer)->MalformedStacks()},
                      {"no_process_facts", report.counters.stack_no_proc}, {"received", paths.events()},
                      {"processes", paths.pids().size()},
                      {"stop_reasons", stops}};
  }
  int rc = 0;
  if (!a.json.empty())
    if (auto st = WriteFileAtomic(a.json, json.dump(2) + "\n"); !st.ok()) rc = Fail(st.error());
  if (!a.pprof.empty()) {
    auto pb = profile::WritePprofGz(a.stacks ? cp.profile : exitprobe::ReportProfile(report));
    if (!pb.ok())
      rc = Fail(pb.error());
    else if (auto st = WriteFileAtomic(a.pprof, *pb); !st.ok())
      rc = Fail(st.error());
  }
  if (!a.quiet) fputs(exitprobe::ReportText(report, !a.no_histograms).c_str(), stdout);
  if (!a.quiet && a.stacks) {
    fputs(exitprobe::CallPathsText(cp, a.top_paths).c_str(), stdout);
    fprintf(stdout, "Call paths: %llu exits unwound, %llu faster than --slower-than, %llu lost (ring buffer full), %llu "
                    "malformed, %llu without runtime facts\n",
            static_cast<unsigned long long>(report.counters.stack_sent), static_cast<unsigned long long>(report.counters.stack_fast),
            static_cast<unsigned long long>(report.counters.stack_lost),
            static_cast<unsigned long long>((*tracer)->MalformedStacks()),
            static_cast<unsigned long long>(report.counters.stack_no_proc));
  }
  return rc;
}

}  // namespace

void AddTraceCommand(CLI::App& app, Runner* run) {
  auto args = std::make_shared<TraceArgs>();
  CLI::App* cmd = app.add_subcommand(
      "trace",
      "Latency of chosen functions of a running program: a uprobe on each function's entry and\n"
      "one on each of its RET instructions, paired per goroutine by stack depth (never a uretprobe\n"
      "on Go code, which kills the program when its stack is copied). Prints, per function, calls,\n"
      "exits, calls aborted by a panic or Goexit, and the latency distribution.");
  auto* pid = cmd->add_option("--pid,-p", args->pid, "trace this process (its executable)");
  auto* binary = cmd->add_option("--binary,-b", args->binary, "trace every process that runs this executable");
  pid->excludes(binary);
  cmd->add_option("--func,-f", args->funcs,
                  "regex searched in function names (repeatable; default ^main\\. for Go)");
  cmd->add_option("--duration,-d", args->duration, "seconds to trace (default: until Ctrl-C or the process ends)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--json", args->json, "write the results as JSON to this file");
  cmd->add_option("--pprof", args->pprof, "write a pprof profile (calls and total nanoseconds per function)");
  cmd->add_option("--entry", args->entry,
                  "entry probe placement: auto (first emulated instruction, e.g. the stack check's JBE) "
                  "or first (the first instruction)")
      ->check(CLI::IsMember({"auto", "first"}));
  cmd->add_flag("--verbose,-v", args->verbose, "list every probe site and whether the kernel emulates it");
  cmd->add_flag("--quiet,-q", args->quiet, "no status line and no report on the terminal");
  cmd->add_flag("--no-histograms", args->no_histograms, "leave the per-function histograms out of the report");
  cmd->add_flag("--uretprobe", args->uretprobe, "time exits with uretprobes (the default for non-Go binaries)");
  cmd->add_flag("--allow-unsafe-uretprobe", args->allow_unsafe_uretprobe,
                "allow --uretprobe on a Go binary (it crashes the program; for demonstration)");
  cmd->add_flag("--perf-event", args->perf_event, "one perf-event uprobe per site instead of one uprobe_multi link");
  cmd->add_option("--max-pending", args->max_pending, "pending calls tracked at once (default 65536)")
      ->check(CLI::Range(16u, 1u << 24));
  cmd->add_option("--max-funcs", args->max_funcs, "refuse patterns matching more functions (default 20000)");
  cmd->add_flag("--stacks", args->stacks,
                "at each traced call's exit, unwind the caller's stack (the sampler's unwinder: across\n"
                "systemstack, mcall, cgo...) and aggregate per call path: calls, total and max time, a\n"
                "histogram (--json), top paths in the report; --pprof then holds the paths (sample types\n"
                "calls, total, max: go tool pprof -sample_index=total)");
  cmd->add_option("--slower-than", args->slower_than,
                  "with --stacks: keep only calls at least this long (e.g. 500us, 5ms); faster calls cost no unwind");
  cmd->add_flag("--no-labels", args->no_labels, "with --stacks: leave goroutine pprof labels out of the paths");
  cmd->add_option("--top-paths", args->top_paths, "with --stacks: paths per function in the report (default 5)");
  cmd->callback([args, run, pid, binary] {
      if (!args->slower_than.empty() && !args->stacks) { *run = [] { return Fail("--slower-than needs --stacks"); }; return; }
    *run = [args, pid, binary] {
      if (pid->count() == 0 && binary->count() == 0) return Fail("give --pid PID or --binary PATH");
      return RunTrace(*args);
    };
  });
}

}  // namespace sb::cli
