#include "agent/agent.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <list>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "agent/merge.h"
#include "agent/process_labels.h"
#include "agent/window_index.h"
#include "agent/window_naming.h"
#include "base/file_util.h"
#include "ebpf/unwind/host_unwind.h"
#include "profile/writers.h"
#include "recorder/sample_aggregator.h"
#include "recorder/sampling_session.h"
#include "recorder/stack_symbolizer.h"

namespace sb::agent {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using recorder::SampleAggregator;

namespace {

int64_t WallNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct CaptureSub {
  CaptureFilter filter;
  std::regex re;
  std::map<uint32_t, SampleAggregator> aggs;
};

struct Agent::Impl {
  AgentOptions opts;
  std::string host;
  ProcessSelector selector;
  std::unique_ptr<recorder::SamplingSession> session;

  // Lock order: tracker_mu, then state_mu, then cap_mu.
  mutable std::mutex tracker_mu;  // the session: its tracker, sampler and symbolization
  mutable std::mutex state_mu;    // followed, counters
  std::map<uint32_t, FollowedProcess> followed;
  // Log lines of processes followed from their exec (OnFollowed): said one by one up to this
  // many per window, then counted.
  static constexpr size_t kLoudFollowsPerWindow = 10;
  size_t quiet_follows_this_window = 0;
  std::set<uint32_t> quiet_pids;  // followed without a line: forgotten without one
  AgentCounters counters;
  std::mutex cap_mu;
  std::list<CaptureSub*> captures;
  std::atomic<int> active_captures{0};

  // The current window (agent thread only).
  std::map<uint32_t, SampleAggregator> window;
  int64_t window_start_ns = 0;
  Clock::time_point window_start;

  explicit Impl(const AgentOptions& o, ProcessSelector s) : opts(o), selector(std::move(s)) {}

  void Log(const std::string& line) {
    if (opts.log)
      opts.log(line);
    else
      fprintf(stderr, "switchback agent: %s\n", line.c_str());
  }

  void OnFollowed(const recorder::TrackedProcess& p) {
    ProcessFacts f;
    f.host = host;
    f.exe = p.exe;
    f.pid = p.pid;
    f.go_version = p.facts ? p.facts->go_version : "";
    f.build_id = p.binary ? p.binary->build_id() : "";
    auto cg = ReadFile("/proc/" + std::to_string(p.pid) + "/cgroup");
    if (cg.ok()) f.cgroup_file = *cg;
    FollowedProcess fp;
    fp.pid = p.pid;
    fp.exe = p.exe;
    fp.go_version = f.go_version;
    fp.facts_source = p.facts ? p.facts->offsets_source : "";
    fp.labels = ProcessLabels(f);
    {
      std::lock_guard<std::mutex> l(state_mu);
      followed[p.pid] = fp;
      counters.processes_followed = followed.size();
    }
    std::string extra;
    for (const char* k : {"container_id", "unit"})
      if (auto it = fp.labels.find(k); it != fp.labels.end()) extra += fmt::format(", {} {}", k, it->second);
    // Processes made from their executable's template come and go by the hundred per second on
    // a build host: a few per window are said one by one, the rest counted in one line at the
    // window's end (a restarted service is among the first, and said).
    if (p.from_template && quiet_follows_this_window >= kLoudFollowsPerWindow) {
      quiet_follows_this_window++;
      quiet_pids.insert(p.pid);
      return;
    }
    if (p.from_template) quiet_follows_this_window++;
    Log(fmt::format("following process {} ({}, {}{})", p.pid, p.exe, f.go_version.empty() ? "Go" : f.go_version,
                    extra));
  }

  void OnSample(const sb_cpu_sample& rec) {
    const sb_sample& s = rec.s;
    bool whole = recorder::IsWhole(rec);
    std::string exe;
    {
      std::lock_guard<std::mutex> l(state_mu);
      auto f = followed.find(s.pid);
      // A sample still in the ring buffer of a process already forgotten has nothing to
      // symbolize it with.
      if (f == followed.end()) return;
      f->second.samples++;
      if (whole) f->second.whole_samples++;
      if (active_captures.load() > 0) exe = f->second.exe;
    }
    window.try_emplace(s.pid, opts.goroutine_labels).first->second.Add(rec);
    if (active_captures.load() == 0) return;
    std::lock_guard<std::mutex> l(cap_mu);
    for (CaptureSub* c : captures) {
      bool match = c->filter.pid != 0 ? c->filter.pid == s.pid : (!exe.empty() && std::regex_search(exe, c->re));
      if (match) c->aggs.try_emplace(s.pid, opts.goroutine_labels).first->second.Add(rec);
    }
  }

  // Symbolizes AGG (one process) with its process labels. Needs tracker_mu.
  profile::ProfileData Symbolize(const SampleAggregator& agg, uint32_t pid) {
    recorder::SymbolizeOptions so;
    so.period_nanos = 1000000000LL / opts.frequency_hz;
    so.kernel = session->kernel_symbols();
    profile::ProfileData d = recorder::SymbolizeStacks(agg, session->tracker(), so);
    std::map<std::string, std::string> labels;
    {
      std::lock_guard<std::mutex> l(state_mu);
      if (auto it = followed.find(pid); it != followed.end()) labels = it->second.labels;
    }
    for (auto& s : d.samples)
      for (const auto& [k, v] : labels) s.labels[k] = v;
    return d;
  }

  void SnapshotCounters() {  // needs tracker_mu
    sb_counters c = session->sampler().Counters();
    auto ps = session->sampler().ProgramStats();
    sb_kernel_counters kc = session->sampler().KernelCounters();
    sym::BinaryCacheStats bc = session->tracker().cache()->Stats();
    uint64_t newly_lost = 0;  // process events, logged after the lock
    {
      std::lock_guard<std::mutex> l(state_mu);
      counters.kernel_in_kernel = kc.in_kernel;
      counters.kernel_stacks = kc.stacks;
      counters.kernel_stack_errors = kc.errors;
      counters.binary_cache_bytes = bc.bytes;
      counters.binary_cache_entries = bc.entries;
      counters.binary_cache_evictions = bc.evictions;
      const auto& space = session->sampler().pcsp_space();
      counters.pcsp_table_cells = space.used();
      counters.pcsp_tables = space.tables();
      counters.pcsp_table_capacity = space.capacity();
      counters.samples_by_stop_reason.clear();
      for (int i = 0; i < SB_STOP_MAX; i++)
        if (c.stop[i] != 0) counters.samples_by_stop_reason[unwind::StopReasonName(i)] = c.stop[i];
      counters.crossings_taken.clear();
      for (int i = 0; i < SB_CROSS_MAX; i++)
        counters.crossings_taken[unwind::CrossingName(i)] = c.crossing[i][SB_CNT_CROSSED];
      counters.lost_samples = c.lost;
      if (c.process_events_lost > counters.process_events_lost)
        newly_lost = c.process_events_lost - counters.process_events_lost;
      counters.process_events_lost = c.process_events_lost;
      counters.bpf_run_ns = ps.run_time_ns;
      counters.bpf_run_count = ps.run_count;
    }
    if (newly_lost > 0)
      Log(fmt::format("{} process events found their ring buffer full (the agent was busy): each is sent again at "
                      "its process's next sample",
                      newly_lost));
  }

  void ApplyRetention() {
    RetentionResult r = agent::ApplyRetention(opts.dir, opts.retention, WallNowNs() / 1000000000);
    for (const auto& p : r.deleted) Log("retention: deleted " + opts.dir + "/" + p);
    for (const auto& e : r.errors) Log("retention: " + e);
    std::lock_guard<std::mutex> l(state_mu);
    counters.retention_deletions += r.deleted.size();
  }

  void BeginWindow() {
    if (quiet_follows_this_window > kLoudFollowsPerWindow)
      Log(fmt::format("following {} more processes made from their executables' templates at exec",
                      quiet_follows_this_window - kLoudFollowsPerWindow));
    quiet_follows_this_window = 0;
    window.clear();
    window_start = Clock::now();
    window_start_ns = WallNowNs();
  }

  // Writes one file per process with samples, then forgets exited processes. Needs tracker_mu.
  void EndWindow() {
    while (session->Poll(0, [this](const sb_cpu_sample& s) { OnSample(s); }) > 0) {
    }
    int64_t duration = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - window_start).count();
    for (auto& [pid, agg] : window) {
      if (agg.total() == 0) continue;
      WriteWindowFile(pid, agg, duration);
    }
    window.clear();
    if (active_captures.load() == 0) {  // a capture may still symbolize an exited process
      std::vector<uint32_t> gone;
      {
        std::lock_guard<std::mutex> l(state_mu);
        for (auto it = followed.begin(); it != followed.end();) {
          if (it->second.exited) {
            gone.push_back(it->first);
            it = followed.erase(it);
          } else {
            ++it;
          }
        }
        counters.processes_followed = followed.size();
      }
      size_t quiet = 0;
      for (uint32_t pid : gone) {
        const recorder::TrackedProcess* tp = session->tracker().Find(pid);
        bool ran_exec = tp != nullptr && tp->ran_exec;
        session->Forget(pid);
        if (quiet_pids.erase(pid) > 0)
          quiet++;
        else
          Log(fmt::format("forgot process {} ({}, last window written)", pid, ran_exec ? "ran exec" : "exited"));
      }
      if (quiet > 0) Log(fmt::format("forgot {} more processes (exited, last window written)", quiet));
      session->tracker().cache()->Trim();
    }
    session->ForgetGoneIgnored();
    sym::BinaryCacheStats bc = session->tracker().cache()->Stats();
    const auto& space = session->sampler().pcsp_space();
    Log(fmt::format("binary cache: {:.1f} MiB in {} binaries (bound {:.0f} MiB, {} evicted so far); pcsp tables: "
                    "{} binaries, {:.1f}% of the BPF array",
                    bc.bytes / 1048576.0, bc.entries, bc.max_bytes / 1048576.0, bc.evictions, space.tables(),
                    space.capacity() ? 100.0 * space.used() / space.capacity() : 0.0));
  }

  void WriteWindowFile(uint32_t pid, const SampleAggregator& agg, int64_t duration) {
    profile::ProfileData d = Symbolize(agg, pid);
    d.start_time_nanos = window_start_ns;
    d.duration_nanos = duration;
    WindowFile w;
    w.pid = pid;
    {
      std::lock_guard<std::mutex> l(state_mu);
      if (auto it = followed.find(pid); it != followed.end()) {
        w.exe = it->second.exe;
        w.labels = it->second.labels;
      }
    }
    w.start_unix_ns = window_start_ns;
    w.duration_ns = duration;
    w.samples = agg.total();
    std::string rel = WindowRelativePath(window_start_ns, w.exe, pid);
    // A window of this process that started in the same second exists (the agent restarted
    // within it): the next free sequence number, never an overwrite.
    for (int seq = 1; seq < 1000 && fs::exists(opts.dir + "/" + rel); seq++)
      rel = WindowRelativePath(window_start_ns, w.exe, pid, seq);
    w.path = opts.dir + "/" + rel;
    IndexEntry e;
    e.path = rel;
    e.start_unix_ns = w.start_unix_ns;
    e.duration_ns = duration;
    e.pid = pid;
    e.exe = w.exe;
    e.labels = w.labels;
    e.samples = w.samples;
    uint64_t whole = 0;
    for (const auto& [key, n] : agg.stacks()) {
      e.stop_reasons[unwind::StopReasonName(key.stop_reason)] += n;
      if (recorder::IsWhole(key)) whole += n;
    }
    e.whole_share = w.samples ? static_cast<double>(whole) / static_cast<double>(w.samples) : 0;
    d.comments.push_back(fmt::format("switchback agent window of process {} ({})", pid, w.exe));
    auto fail = [&](const std::string& why) {
      Log(fmt::format("window file {} not written ({} samples lost): {}", w.path, w.samples, why));
      std::lock_guard<std::mutex> l(state_mu);
      counters.window_write_failures++;
    };
    auto pb = profile::WritePprofGz(d);
    if (!pb.ok()) return fail(pb.error());
    std::error_code ec;
    fs::create_directories(fs::path(w.path).parent_path(), ec);
    if (ec) return fail("cannot create " + fs::path(w.path).parent_path().string() + ": " + ec.message());
    if (auto st = WriteFileAtomic(w.path, *pb); !st.ok()) return fail(st.error());
    if (auto st = AppendIndex(opts.dir, e); !st.ok()) Log("index: " + st.error());
    {
      std::lock_guard<std::mutex> l(state_mu);
      counters.windows_written++;
      if (auto it = followed.find(pid); it != followed.end()) it->second.latest_window_file = w.path;
    }
    Log(fmt::format("wrote {} ({} samples, {:.0f}% whole, {:.1f} s, {} bytes)", w.path, w.samples,
                    100 * e.whole_share, duration / 1e9, pb->size()));
    if (opts.on_window_written) opts.on_window_written(w);
  }
};

Agent::Agent(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Agent::~Agent() = default;

Result<std::unique_ptr<Agent>> Agent::Open(const AgentOptions& opts) {
  if (opts.dir.empty()) return MakeError("give --dir DIR (where the window files go)");
  if (opts.frequency_hz <= 0 || opts.frequency_hz > 10000) return MakeError("--frequency must be between 1 and 10000 Hz");
  if (opts.interval < std::chrono::milliseconds(500)) return MakeError("--interval is below 0.5 s");
  auto sel = ProcessSelector::Make(opts.selection);
  if (!sel.ok()) return sel.take_error();
  std::error_code ec;
  fs::create_directories(opts.dir, ec);
  if (ec) return MakeError("cannot create --dir " + opts.dir + ": " + ec.message());
  if (auto st = CheckWritable(opts.dir + "/index.jsonl"); !st.ok()) return MakeError(st.error());
  auto impl = std::make_unique<Impl>(opts, std::move(*sel));
  impl->opts.dir = fs::absolute(opts.dir).lexically_normal().string();
  if (impl->opts.dir.size() > 1 && impl->opts.dir.back() == '/') impl->opts.dir.pop_back();
  impl->host = opts.host.empty() ? HostName() : opts.host;
  Impl* im = impl.get();
  if (size_t n = RemoveLeftoverTemporaries(im->opts.dir))
    im->Log(fmt::format("removed {} temporary file(s) left by an earlier run", n));
  im->ApplyRetention();

  recorder::SessionOptions so;
  so.frequency_hz = opts.frequency_hz;
  so.max_frames = opts.max_frames;
  so.kernel_stacks = opts.kernel;
  so.binary_cache_bytes = opts.binary_cache_bytes;
  so.all = im->selector.discovers();
  so.want = [im](uint32_t pid) { return im->selector.Wants(pid); };
  so.on_warning = [im](const std::string& w) { im->Log("warning: " + w); };
  so.on_binary = [im](const std::string& line) { im->Log(line); };
  so.on_followed = [im](const recorder::TrackedProcess& p) { im->OnFollowed(p); };
  auto s = recorder::SamplingSession::Open(so);
  if (!s.ok()) return s.take_error();
  im->session = std::move(*s);
  for (uint32_t pid : opts.selection.pids)
    if (auto st = im->session->Follow(pid); !st.ok()) return MakeError(st.error());
  return std::unique_ptr<Agent>(new Agent(std::move(impl)));
}

Status Agent::Run(const std::atomic<bool>* stop) {
  Impl& im = *impl_;
  auto on_sample = [&im](const sb_cpu_sample& s) { im.OnSample(s); };
  auto stopping = [stop] { return stop != nullptr && stop->load(); };
  im.Log(fmt::format("profiling {} at {} Hz, {:.1f} s windows, into {}{}", im.selector.Describe(), im.opts.frequency_hz,
                     im.opts.interval.count() / 1000.0, im.opts.dir,
                     im.session->kernel_symbols() ? ", with kernel frames" : ""));
  im.BeginWindow();
  {
    std::lock_guard<std::mutex> l(im.tracker_mu);
    im.session->Scan(on_sample, stop);
  }
  if (im.opts.on_started) im.opts.on_started();
  auto last_alive = Clock::now(), last_snapshot = Clock::now();
  for (;;) {
    bool all_gone = false;
    {
      std::lock_guard<std::mutex> l(im.tracker_mu);
      im.session->Poll(100, on_sample);
      auto now = Clock::now();
      if (now - last_alive > std::chrono::milliseconds(500)) {
        last_alive = now;
        for (uint32_t pid : im.session->CheckExited()) {
          std::string exe;
          {
            std::lock_guard<std::mutex> sl(im.state_mu);
            if (auto it = im.followed.find(pid); it != im.followed.end()) {
              it->second.exited = true;
              exe = it->second.exe;
            }
          }
          const recorder::TrackedProcess* tp = im.session->tracker().Find(pid);
          im.Log(fmt::format("process {} ({}) {}; its samples stay in this window", pid, exe,
                             tp != nullptr && tp->ran_exec ? "ran exec (its new program is another process)"
                                                           : "exited"));
        }
        if (!im.selector.discovers()) {
          std::lock_guard<std::mutex> sl(im.state_mu);
          all_gone = true;
          for (const auto& [pid, f] : im.followed) all_gone = all_gone && f.exited;
        }
      }
      if (now - last_snapshot > std::chrono::seconds(1)) {
        last_snapshot = now;
        im.SnapshotCounters();
      }
      bool window_over = now - im.window_start >= im.opts.interval;
      if (!(stopping() || window_over || all_gone)) continue;
      im.EndWindow();
      im.SnapshotCounters();
    }
    im.ApplyRetention();
    if (stopping()) {
      sb_counters c;
      {
        std::lock_guard<std::mutex> l(im.tracker_mu);
        c = im.session->sampler().Counters();
      }
      im.Log(fmt::format("stopping (signal): last window written; {} processes were followed from their exec "
                         "(their executable's template)",
                         c.from_template));
      break;
    }
    if (all_gone) {
      im.Log("every process given by --pid has exited: stopping");
      break;
    }
    im.BeginWindow();
    // A process missed by the sampler's report (or moved into --cgroup since) is found here.
    std::lock_guard<std::mutex> l(im.tracker_mu);
    im.session->Scan(on_sample, stop);
  }
  return Status::Ok();
}

std::vector<FollowedProcess> Agent::Processes() const {
  std::lock_guard<std::mutex> l(impl_->state_mu);
  std::vector<FollowedProcess> out;
  for (const auto& [pid, f] : impl_->followed) out.push_back(f);
  return out;
}

AgentCounters Agent::Counters() const {
  std::lock_guard<std::mutex> l(impl_->state_mu);
  return impl_->counters;
}

Result<profile::ProfileData> Agent::Capture(const CaptureFilter& f, std::chrono::milliseconds duration,
                                            const std::atomic<bool>* cancel) {
  Impl& im = *impl_;
  if ((f.pid != 0) == !f.exe_regex.empty()) return MakeError("a capture needs exactly one of pid and exe");
  CaptureSub sub;
  sub.filter = f;
  if (!f.exe_regex.empty()) {
    try {
      sub.re = std::regex(f.exe_regex, std::regex::extended | std::regex::nosubs);
    } catch (const std::regex_error& e) {
      return MakeError("bad exe regular expression '" + f.exe_regex + "': " + e.what());
    }
  }
  {
    std::lock_guard<std::mutex> l(im.state_mu);
    bool any = false;
    for (const auto& [pid, p] : im.followed)
      if (!p.exited && (f.pid != 0 ? pid == f.pid : std::regex_search(p.exe, sub.re))) any = true;
    if (!any)
      return MakeError(f.pid != 0 ? fmt::format("process {} is not followed by the agent", f.pid)
                                  : "no followed process's executable matches '" + f.exe_regex + "'");
  }
  int64_t start_ns = WallNowNs();
  auto start = Clock::now();
  {
    std::lock_guard<std::mutex> l(im.cap_mu);
    im.captures.push_back(&sub);
    im.active_captures++;
  }
  while (Clock::now() - start < duration && !(cancel != nullptr && cancel->load()))
    std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(
        std::chrono::milliseconds(20),
        std::chrono::duration_cast<std::chrono::milliseconds>(duration - (Clock::now() - start)) +
            std::chrono::milliseconds(1)));
  int64_t took = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
  std::lock_guard<std::mutex> tl(im.tracker_mu);  // the agent thread has delivered what it polled
  {
    std::lock_guard<std::mutex> l(im.cap_mu);
    im.captures.remove(&sub);
    im.active_captures--;
  }
  std::vector<profile::ProfileData> parts;
  for (const auto& [pid, agg] : sub.aggs) parts.push_back(im.Symbolize(agg, pid));
  profile::ProfileData d = MergeProfiles(parts);
  d.period_nanos = 1000000000LL / im.opts.frequency_hz;
  d.start_time_nanos = start_ns;
  d.duration_nanos = took;
  d.comments.push_back("switchback agent capture");
  return d;
}

}  // namespace sb::agent
