// `switchback merge`: the agent's windows of one process or executable over a time range,
// merged into one pprof file (see agent/merge.h).
#include <cstdio>
#include <memory>
#include <string>

#include "agent/merge.h"
#include "agent/retention.h"
#include "base/file_util.h"
#include "profile/writers.h"
#include "tools/switchback/commands.h"

namespace sb::cli {
namespace {

struct MergeArgs {
  std::string dir;
  std::string exe;
  uint32_t pid = 0;
  std::string since, from, to;
  std::string output;
};

int Fail(const std::string& msg) {
  fprintf(stderr, "switchback merge: %s\n", msg.c_str());
  return 1;
}

int RunMerge(const MergeArgs& a) {
  agent::MergeQuery q;
  q.exe_regex = a.exe;
  q.pid = a.pid;
  if (!a.since.empty() && (!a.from.empty() || !a.to.empty())) return Fail("--since excludes --from and --to");
  if (!a.since.empty()) {
    auto d = agent::ParseDuration(a.since);
    if (!d.ok()) return Fail("--since: " + d.error());
    q.from_unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::system_clock::now().time_since_epoch()).count() - *d;
  }
  if (!a.from.empty()) {
    auto t = agent::ParseTime(a.from);
    if (!t.ok()) return Fail("--from: " + t.error());
    q.from_unix_ns = *t;
  }
  if (!a.to.empty()) {
    auto t = agent::ParseTime(a.to);
    if (!t.ok()) return Fail("--to: " + t.error());
    q.to_unix_ns = *t;
  }
  if (auto st = CheckWritable(a.output); !st.ok()) return Fail(st.error());
  auto r = agent::MergeWindows(a.dir, q);
  if (!r.ok()) return Fail(r.error());
  for (const auto& s : r->skipped) fprintf(stderr, "switchback merge: skipped %s\n", s.c_str());
  auto pb = profile::WritePprofGz(r->profile);
  if (!pb.ok()) return Fail(pb.error());
  if (auto st = WriteFileAtomic(a.output, *pb); !st.ok()) return Fail(st.error());
  int64_t samples = 0;
  for (const auto& s : r->profile.samples) samples += s.count;
  fprintf(stderr, "switchback merge: %zu window(s), %lld samples -> %s\n", r->windows,
          static_cast<long long>(samples), a.output.c_str());
  return 0;
}

}  // namespace

void AddMergeCommand(CLI::App& app, Runner* run) {
  auto args = std::make_shared<MergeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "merge",
      "Merge the window files `switchback agent` wrote in DIR (found through DIR/index.jsonl)\n"
      "into one pprof profile: equal stacks with equal labels become one sample, values summed.");
  cmd->add_option("--dir", args->dir, "the agent's directory")->required();
  cmd->add_option("--exe", args->exe, "only windows of executables whose path matches this regex");
  cmd->add_option("--pid,-p", args->pid, "only windows of this process");
  cmd->add_option("--since", args->since, "only windows that end within this long before now (e.g. 1h)");
  cmd->add_option("--from", args->from, "only windows ending after this time (2026-12-01T21:00:00Z or unix s)");
  cmd->add_option("--to", args->to, "only windows starting before this time");
  cmd->add_option("--output,-o", args->output, "the merged pprof (gzip)")->required();
  cmd->callback([args, run] { *run = [args] { return RunMerge(*args); }; });
}

}  // namespace sb::cli
