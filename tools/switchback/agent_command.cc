// `switchback agent`: continuous profiling until SIGTERM/SIGINT (see agent/agent.h).
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/retention.h"
#include "ebpf/unwind/unwind_types.h"
#include "tools/switchback/agent_serve.h"
#include "tools/switchback/commands.h"

namespace sb::cli {
namespace {

std::atomic<bool> g_agent_stop{false};

void OnAgentSignal(int) { g_agent_stop.store(true); }

struct AgentArgs {
  std::string dir;
  int frequency = 19;
  uint32_t max_frames = SB_DEFAULT_MAX_FRAMES;
  std::string interval = "60s";
  bool testing_short_interval = false;
  std::vector<uint32_t> pids;
  std::string exe;
  std::string cgroup;
  bool goroutine_labels = false;
  bool kernel = true;
  std::string binary_cache = "256MiB";
  std::string keep;
  std::string max_disk;
  std::string host;
  ServeFlags serve;  // --listen, --push and their options
};

int Fail(const std::string& msg) {
  fprintf(stderr, "switchback agent: %s\n", msg.c_str());
  return 1;
}

int RunAgent(const AgentArgs& a) {
  struct sigaction sa {};
  sa.sa_handler = OnAgentSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  agent::AgentOptions o;
  o.dir = a.dir;
  o.frequency_hz = a.frequency;
  o.max_frames = a.max_frames;
  auto iv = agent::ParseDuration(a.interval);
  if (!iv.ok()) return Fail("--interval: " + iv.error());
  const int64_t kSec = 1000000000LL;
  if (*iv > 3600 * kSec) return Fail("--interval is at most 1h");
  if (*iv < 10 * kSec && !a.testing_short_interval)
    return Fail("--interval is at least 10s (shorter windows are for tests: add --testing-short-interval)");
  if (*iv < kSec) return Fail("--interval is at least 1s, even for tests");
  o.interval = std::chrono::milliseconds(*iv / 1000000);
  o.selection.pids = a.pids;
  o.selection.exe_regex = a.exe;
  o.selection.cgroup = a.cgroup;
  o.goroutine_labels = a.goroutine_labels;
  o.kernel = a.kernel;
  auto bc = agent::ParseSize(a.binary_cache);
  if (!bc.ok()) return Fail("--binary-cache: " + bc.error());
  o.binary_cache_bytes = *bc;
  if (!a.keep.empty()) {
    auto k = agent::ParseDuration(a.keep);
    if (!k.ok()) return Fail("--keep: " + k.error());
    o.retention.keep_ns = *k;
  }
  if (!a.max_disk.empty()) {
    auto m = agent::ParseSize(a.max_disk);
    if (!m.ok()) return Fail("--max-disk: " + m.error());
    o.retention.max_disk = *m;
  }
  o.host = a.host;
  // The listener and the push spool first: a bad flag or a port in use fails before the
  // sampler loads.
  auto serving = AgentServing::Start(a.serve, a.dir);
  if (!serving.ok()) return Fail(serving.error());
  o.on_window_written = (*serving)->WindowHook();
  auto ag = agent::Agent::Open(o);
  if (!ag.ok()) return Fail(ag.error());
  (*serving)->Attach(ag->get());
  Status st = (*ag)->Run(&g_agent_stop);
  (*serving)->Stop();  // before the agent goes: no request reaches it afterwards
  if (!st.ok()) return Fail(st.error());
  return 0;
}

}  // namespace

void AddAgentCommand(CLI::App& app, Runner* run) {
  auto args = std::make_shared<AgentArgs>();
  CLI::App* cmd = app.add_subcommand(
      "agent",
      "Profile Go processes continuously until SIGTERM/SIGINT: every Go process on the host\n"
      "(also those that start later), or those chosen by --pid, --exe or --cgroup. Every\n"
      "--interval, each process with samples gets one pprof file DIR/YYYY-MM-DD/\n"
      "HHMMSSZ-EXE-PID.pb.gz (UTC window start; written under a temporary name, then renamed,\n"
      "so a file is whole or absent) and a line in DIR/index.jsonl. Samples carry the labels\n"
      "host, exe, pid, go_version, build_id, container_id, unit, thread and tid. SIGTERM cuts\n"
      "the current window short and writes it. `switchback merge` joins windows.");
  cmd->add_option("--dir", args->dir, "directory for window files and index.jsonl (created)")->required();
  cmd->add_option("--frequency,-F", args->frequency,
                  "samples per second per CPU (default 19: a prime, so sampling does not run in\n"
                  "lock step with periodic work such as 10 ms timers or 100 Hz tickers)")
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--max-frames", args->max_frames,
                  "frames kept per stack, 1-" + std::to_string(SB_MAX_FRAMES) + " (default " +
                      std::to_string(SB_DEFAULT_MAX_FRAMES) + ", runtime/pprof's depth); a deeper stack\n"
                      "keeps its leaf side and ends with [stopped: max_frames]")
      ->check(CLI::Range(1, SB_MAX_FRAMES));
  cmd->add_option("--interval", args->interval,
                  "window length, 10s to 1h (default 60s: long enough that a window's file is\n"
                  "small next to its samples, short enough to see a minute's regression)");
  cmd->add_flag("--testing-short-interval", args->testing_short_interval,
                "allow --interval from 1s (for tests: many tiny files, not for production)");
  cmd->add_option("--pid,-p", args->pids, "follow only this process (repeatable); the agent stops when all exited");
  cmd->add_option("--exe", args->exe, "follow only Go processes whose executable path matches this regex (POSIX ERE)");
  cmd->add_option("--cgroup", args->cgroup,
                  "follow only Go processes in this cgroup directory or below it (v2, e.g.\n"
                  "/sys/fs/cgroup/unified/system.slice/x.service, or a v1 hierarchy's directory)");
  cmd->add_flag("--goroutine-labels", args->goroutine_labels,
                "add each sample's goroutine id (off by default: over a window it makes almost\n"
                "every sample unique and the files several times larger)");
  cmd->add_flag("--kernel,!--no-kernel", args->kernel,
                "each sample's kernel stack above its user stack (where a Go program spends its\n"
                "time in write, epoll_wait or page faults), symbolized from /proc/kallsyms into the\n"
                "mapping [kernel.kallsyms] (default on; --no-kernel: user stacks only)");
  cmd->add_option("--binary-cache", args->binary_cache,
                  "bound of the parsed binaries kept for symbolizing (their mapped file bytes;\n"
                  "least recently used first out, binaries in use stay; default 256MiB)");
  cmd->add_option("--keep", args->keep, "delete windows older than this (e.g. 24h, 7d); default: keep");
  cmd->add_option("--max-disk", args->max_disk,
                  "delete the oldest windows while DIR holds more than this (e.g. 1GiB, 500MiB)");
  cmd->add_option("--host", args->host, "the host label (default: the host name)");
  AddServeFlags(cmd, &args->serve);
  cmd->callback([args, run] { *run = [args] { return RunAgent(*args); }; });
}

}  // namespace sb::cli
