#include "recorder/recorder.h"

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <thread>

#include "ebpf/unwind/host_unwind.h"
#include "recorder/process_tracker.h"
#include "recorder/sample_aggregator.h"
#include "recorder/sample_labels.h"
#include "recorder/sampling_session.h"
#include "recorder/stack_symbolizer.h"
#include "unwinder/bpf_sampler.h"

namespace sb::recorder {
namespace {

using Clock = std::chrono::steady_clock;

RecordStats CollectStats(const SampleAggregator& agg, const ProcessTracker& tracker,
                         const unwinder::BpfSampler& sampler, double elapsed, int freq, bool kernel,
                         unwinder::CompareWalk compare) {
  RecordStats st;
  st.duration_s = elapsed;
  st.frequency_hz = freq;
  st.samples = agg.total();
  sb_counters c = sampler.Counters();
  st.lost = c.lost;
  st.unknown_pid = c.unknown_pid;
  st.process_events_lost = c.process_events_lost;
  st.from_template = c.from_template;
  st.not_analyzed = c.not_analyzed;
  for (const auto& [key, n] : sampler.NotAnalyzed()) {
    std::string exe = tracker.ExePathOf(key);
    st.not_analyzed_by_exe[exe.empty() ? std::to_string(key.dev) + ":" + std::to_string(key.ino) : exe] += n;
  }
  st.exiting = c.exiting;
  st.in_exec = c.in_exec;
  st.unwound = c.samples;
  st.unwind_ns = c.unwind_ns;
  st.unwind_frames = c.unwind_frames;
  st.fp_walk_ns = c.fp_walk_ns;
  st.fp_walk_frames = c.fp_walk_frames;
  st.floor_ns = c.floor_ns;
  st.floor_frames = c.floor_frames;
  if (compare == unwinder::CompareWalk::kFloor) st.floor_walk = "floor";
  if (compare == unwinder::CompareWalk::kCrossingFloor) st.floor_walk = "crossing_floor";
  if (c.fp_walk_ns > 0) {  // every benchmark mode: the unwinder's (or the floor's) and the plain walk's
    static constexpr const char* kKinds[SB_CMP_KINDS] = {"goroutine", "g0_morestack", "g0_other"};
    for (int i = 0; i < SB_CMP_KINDS; i++)
      st.compare_by_kind[kKinds[i]] = {c.cmp[i][SB_CMP_SAMPLES], c.cmp[i][SB_CMP_UNWIND_NS],
                                       c.cmp[i][SB_CMP_UNWIND_FRAMES], c.cmp[i][SB_CMP_FP_NS],
                                       c.cmp[i][SB_CMP_FP_FRAMES]};
  }
  st.labels_ns = c.labels_ns;
  st.pcsp_lookups = c.pcsp_lookups;
  st.pcsp_cache_hits = c.pcsp_cache_hits;
  for (int i = 0; i < SB_LABELS_MAX; i++) st.labels[LabelsStatusName(i)] = c.labels[i];
  for (const auto& [key, n] : agg.stacks()) {
    st.stop_reasons[unwind::StopReasonName(key.stop_reason)] += n;
    if (IsWhole(key)) st.ended_at_root += n;
    if (!key.kernel_frames.empty()) st.kernel_samples += n;
  }
  st.kernel = kernel;
  sb_kernel_counters kc = sampler.KernelCounters();
  st.kernel_in_kernel = kc.in_kernel;
  st.kernel_stacks = kc.stacks;
  st.kernel_errors = kc.errors;
  for (int i = 0; i < SB_CROSS_MAX; i++) {
    CrossingStats cs{c.crossing[i][SB_CNT_ATTEMPTS], c.crossing[i][SB_CNT_CROSSED],
                     c.crossing[i][SB_CNT_STOPPED]};
    st.crossings[unwind::CrossingName(i)] = cs;
  }
  for (const auto& [pid, p] : tracker.processes()) {
    if (!p.facts) continue;
    ProcessStats ps;
    ps.pid = pid;
    ps.exe = p.exe;
    ps.go_version = p.facts->go_version;
    ps.offsets_source = p.facts->offsets_source;
    ps.tls_source = p.facts->tls_source;
    ps.labels_source = p.facts->labels_source;
    ps.missing = p.facts->missing;
    auto it = agg.per_pid().find(pid);
    ps.samples = it == agg.per_pid().end() ? 0 : it->second;
    ps.exited = p.exited;
    ps.ran_exec = p.ran_exec;
    ps.warnings = p.warnings;
    st.processes.push_back(std::move(ps));
  }
  auto ps = sampler.ProgramStats();
  st.bpf_run_count = ps.run_count;
  st.bpf_run_time_ns = ps.run_time_ns;
  st.bpf_verified_insns = ps.verified_insns;
  return st;
}

}  // namespace

Result<RecordResult> Record(const RecordOptions& opts) {
  if (opts.frequency_hz <= 0 || opts.frequency_hz > 10000)
    return MakeError("--frequency must be between 1 and 10000 Hz");
  if (opts.pids.empty() && !opts.all) return MakeError("nothing to record: give --pid PID or --all");

  sym::BinaryCache cache;
  // Check the named processes before loading anything: a typo fails in milliseconds.
  {
    ProcessTracker probe(&cache, nullptr);
    for (uint32_t pid : opts.pids)
      if (auto r = probe.Track(pid, /*require_go=*/true); !r.ok()) return r.take_error();
  }

  SessionOptions so;
  so.frequency_hz = opts.frequency_hz;
  so.all = opts.all;
  so.compare = opts.compare;
  so.max_frames = opts.max_frames;
  so.read_labels = opts.labels;
  so.kernel_stacks = opts.kernel;
  so.on_warning = opts.on_warning;
  so.cache = &cache;  // the binaries the check loaded are not loaded again
  auto session = SamplingSession::Open(so);
  if (!session.ok()) return session.take_error();
  SamplingSession& sess = **session;
  ProcessTracker& tracker = sess.tracker();
  auto stopping = [&] { return opts.stop && opts.stop->load(); };
  for (uint32_t pid : opts.pids)
    if (auto st = sess.Follow(pid); !st.ok()) return MakeError(st.error());
  SampleAggregator agg;
  auto on_sample = [&](const sb_cpu_sample& s) { agg.Add(s); };
  sess.Scan(on_sample, opts.stop);

  if (opts.on_started) opts.on_started();
  auto start = Clock::now();
  auto last_status = start;
  auto last_alive = start;
  for (;;) {
    sess.Poll(100, on_sample);
    auto now = Clock::now();
    double elapsed = std::chrono::duration<double>(now - start).count();
    if (stopping()) break;
    if (opts.duration_s > 0 && elapsed >= opts.duration_s) break;
    if (now - last_alive > std::chrono::milliseconds(500)) {
      last_alive = now;
      size_t alive = tracker.CheckAlive();
      if (!opts.all && alive == 0) break;  // everything we were asked to watch has exited
    }
    if (opts.on_status && now - last_status > std::chrono::milliseconds(250)) {
      last_status = now;
      LiveStatus ls{elapsed, agg.total(), sess.sampler().Counters().lost, tracker.processes().size()};
      opts.on_status(ls);
    }
  }
  // No sample after this one: the counters read below then account for every sample taken
  // (in the profile, or lost), and nothing is left in the ring buffer after the drain.
  sess.sampler().StopSampling();
  std::this_thread::sleep_for(std::chrono::milliseconds(10));  // a program still running on a CPU ends
  while (sess.Poll(0, on_sample) > 0) {
  }
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  tracker.CheckAlive();

  RecordResult result;
  result.stats = CollectStats(agg, tracker, sess.sampler(), elapsed, opts.frequency_hz,
                              sess.kernel_symbols() != nullptr, opts.compare);
  SymbolizeOptions sopt;
  sopt.period_nanos = 1000000000LL / opts.frequency_hz;
  sopt.kernel = sess.kernel_symbols();
  result.profile = SymbolizeStacks(agg, tracker, sopt);
  result.profile.duration_nanos = static_cast<int64_t>(elapsed * 1e9);
  result.profile.start_time_nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count() -
                                    result.profile.duration_nanos;
  return result;
}

}  // namespace sb::recorder
