// `switchback record`: sample running Go processes and write pprof / folded / SVG files.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/file_util.h"
#include "profile/writers.h"
#include "recorder/recorder.h"
#include "tools/switchback/commands.h"

namespace sb::cli {
namespace {

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop.store(true); }

struct RecordArgs {
  std::vector<uint32_t> pids;
  bool all = false;
  double duration = 0;
  int frequency = 99;
  std::string output = "switchback.pb.gz";
  std::string folded;
  std::string flamegraph;
  std::string stats;
  bool quiet = false;
  size_t top = 15;
  bool compare_fp_walk = false;
  bool compare_floor = false;
  bool compare_crossing_floor = false;
  uint32_t max_frames = SB_DEFAULT_MAX_FRAMES;
  bool no_labels = false;
  bool kernel = false;
};

int Fail(const std::string& msg) {
  fprintf(stderr, "switchback record: %s\n", msg.c_str());
  return 1;
}

int RunRecord(const RecordArgs& a) {
  // Ctrl-C or SIGTERM from here on ends the recording early, at any step (checks, attach,
  // sampling), and what was recorded is still written.
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // Every output must be writable before we spend the recording time.
  for (const std::string* path : {&a.output, &a.folded, &a.flamegraph, &a.stats}) {
    if (path->empty()) continue;
    if (auto st = CheckWritable(*path); !st.ok()) return Fail(st.error());
  }

  recorder::RecordOptions opts;
  opts.pids = a.pids;
  opts.all = a.all;
  opts.duration_s = a.duration;
  opts.frequency_hz = a.frequency;
  using unwinder::CompareWalk;
  opts.compare = a.compare_fp_walk          ? CompareWalk::kFpWalk
                 : a.compare_floor          ? CompareWalk::kFloor
                 : a.compare_crossing_floor ? CompareWalk::kCrossingFloor
                                            : CompareWalk::kNone;
  opts.max_frames = a.max_frames;
  opts.labels = !a.no_labels;
  opts.kernel = a.kernel;
  opts.stop = &g_stop;
  bool tty = isatty(STDERR_FILENO) && !a.quiet;
  // Warnings go out even with --quiet: they say the profile may be read wrongly later.
  opts.on_warning = [tty](const std::string& w) {
    fprintf(stderr, "%sswitchback: warning: %s\n", tty ? "\r\033[K" : "", w.c_str());
  };
  if (tty) {
    opts.on_status = [](const recorder::LiveStatus& s) {
      fprintf(stderr, "\r\033[K[%6.1fs] samples %llu  lost %llu  processes %zu  (Ctrl-C to stop)",
              s.elapsed_s, static_cast<unsigned long long>(s.samples),
              static_cast<unsigned long long>(s.lost), s.processes);
      fflush(stderr);
    };
  }
  if (!a.quiet) {
    opts.on_started = [&a] {
      std::string what = a.all ? "all Go processes" : fmt::format("{} process(es)", a.pids.size());
      std::string until = a.duration > 0 ? fmt::format(" for {}s", a.duration) : " until Ctrl-C";
      fprintf(stderr, "switchback: recording %s at %d Hz%s\n", what.c_str(), a.frequency, until.c_str());
    };
  }
  auto r = recorder::Record(opts);
  if (tty) fprintf(stderr, "\r\033[K");
  if (!r.ok()) return Fail(r.error());

  int rc = 0;
  auto pb = profile::WritePprofGz(r->profile);
  if (!pb.ok()) return Fail(pb.error());
  if (auto st = WriteFileAtomic(a.output, *pb); !st.ok()) rc = Fail(st.error());
  if (!a.folded.empty())
    if (auto st = WriteFileAtomic(a.folded, profile::WriteFolded(r->profile)); !st.ok()) rc = Fail(st.error());
  if (!a.flamegraph.empty()) {
    std::string title = "switchback CPU profile";
    if (auto st = WriteFileAtomic(a.flamegraph, profile::WriteFlameGraphSvg(r->profile, title)); !st.ok())
      rc = Fail(st.error());
  }
  if (!a.stats.empty())
    if (auto st = WriteFileAtomic(a.stats, recorder::StatsToJson(r->stats).dump(2) + "\n"); !st.ok())
      rc = Fail(st.error());
  if (!a.quiet) {
    fputs(recorder::StatsSummary(r->stats).c_str(), stderr);
    if (a.top > 0 && !r->profile.samples.empty()) {
      fputs("\nTop functions:\n", stderr);
      fputs(profile::WriteTopTable(r->profile, a.top).c_str(), stderr);
    }
    fprintf(stderr, "\nWrote %s", a.output.c_str());
    if (!a.folded.empty()) fprintf(stderr, ", %s", a.folded.c_str());
    if (!a.flamegraph.empty()) fprintf(stderr, ", %s", a.flamegraph.c_str());
    if (!a.stats.empty()) fprintf(stderr, ", %s", a.stats.c_str());
    fprintf(stderr, "\nView: go tool pprof -top %s\n", a.output.c_str());
  }
  return rc;
}

}  // namespace

void AddRecordCommand(CLI::App& app, Runner* run) {
  auto args = std::make_shared<RecordArgs>();
  CLI::App* cmd = app.add_subcommand(
      "record",
      "Sample the on-CPU user stacks of Go processes (all threads) with a BPF perf_event program\n"
      "on every CPU and write a pprof profile. Stacks end at a Go root (runtime.goexit, mstart,\n"
      "rt0_go), at runtime.mcall or runtime.morestack on g0 when the goroutine that called into\n"
      "the scheduler has exited or has run elsewhere since (scheduler work that belongs to no\n"
      "goroutine; Go's own traceback ends there too), or with a final frame [stopped: REASON]\n"
      "saying why they are incomplete.");
  cmd->add_option("--pid,-p", args->pids, "process to record (repeatable)");
  cmd->add_flag("--all,-a", args->all, "record every Go process on the host, including new ones");
  cmd->add_option("--duration,-d", args->duration, "seconds to record (default: until Ctrl-C)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--frequency,-F", args->frequency, "samples per second per CPU (default 99)")
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--output,-o", args->output, "pprof output (gzip), default switchback.pb.gz");
  cmd->add_option("--folded", args->folded, "also write folded stacks (root first) to this file");
  cmd->add_option("--flamegraph", args->flamegraph, "also write an SVG flame graph to this file");
  cmd->add_option("--stats", args->stats, "also write the recording's statistics as JSON");
  cmd->add_option("--top", args->top, "functions to list in the summary (0: none)");
  cmd->add_flag("--quiet,-q", args->quiet, "no status line and no summary");
  cmd->add_option("--max-frames", args->max_frames,
                  "frames kept per stack, 1-" + std::to_string(SB_MAX_FRAMES) + " (default " +
                      std::to_string(SB_DEFAULT_MAX_FRAMES) + ", runtime/pprof's depth); a deeper stack\n"
                      "keeps its leaf side and ends with [stopped: max_frames]; the BPF cost per\n"
                      "sample grows linearly with the frames walked")
      ->check(CLI::Range(1, SB_MAX_FRAMES));
  cmd->add_flag("--compare-fp-walk", args->compare_fp_walk,
                "benchmark: also time a plain frame-pointer walk of every sample in BPF and report\n"
                "its cost next to the unwinder's (in the summary and --stats), also by where the\n"
                "sample was taken: a goroutine's own stack, g0 crossed by morestack, g0 otherwise");
  cmd->add_flag("--compare-floor", args->compare_floor,
                "benchmark: time the floor instead of the unwinder against the plain walk: that walk\n"
                "plus the reads that name the goroutine (TLS g, g.m and goid, m.curg), the least a\n"
                "goroutine-aware unwinder pays (bpf.floor_ns in --stats)")
      ->excludes("--compare-fp-walk");
  cmd->add_flag("--compare-crossing-floor", args->compare_crossing_floor,
                "benchmark: as --compare-floor, and off curg's stack (g0, gsignal) the floor also\n"
                "crosses into curg from its gobuf and walks its frames, unchecked: the least an\n"
                "unwinder that shows the goroutine behind a g0 sample pays")
      ->excludes("--compare-fp-walk")
      ->excludes("--compare-floor");
  cmd->add_flag("--no-labels", args->no_labels,
                "do not read goroutine pprof labels (pprof.Do, SetGoroutineLabels); by default each\n"
                "sample carries its goroutine's labels as pprof string labels beside pid/thread");
  cmd->add_flag("--kernel,!--no-kernel", args->kernel,
                "add each sample's kernel stack (bpf_get_stack) above its user stack, symbolized\n"
                "from /proc/kallsyms into the mapping [kernel.kallsyms] (default off for record)");
  cmd->callback([args, run] {
    *run = [args] {
      if (args->pids.empty() && !args->all) return Fail("give --pid PID (repeatable) or --all");
      if (!args->pids.empty() && args->all) return Fail("--pid and --all exclude each other");
      return RunRecord(*args);
    };
  });
}

}  // namespace sb::cli
