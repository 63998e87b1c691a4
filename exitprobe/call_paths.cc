#include "exitprobe/call_paths.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "ebpf/unwind/host_unwind.h"
#include "exitprobe/latency_histogram.h"
#include "recorder/stack_symbolizer.h"

namespace sb::exitprobe {

void CallPathAggregator::Add(const sb_xp_stack& ev) {
  recorder::StackKey k = recorder::SampleAggregator::KeyOf(ev.s);
  k.tid = 0;   // one path for all threads and goroutines
  k.goid = 0;
  k.comm.clear();
  PathStats& p = paths_[ev.func][std::move(k)];
  if (p.hist.empty()) p.hist.assign(SB_XP_BUCKETS, 0);
  p.calls++;
  p.total_ns += ev.ns;
  p.max_ns = std::max(p.max_ns, ev.ns);
  size_t b = BucketIndex(ev.ns);
  if (b < p.hist.size()) p.hist[b]++;
  pids_[ev.s.pid]++;
  events_++;
}

CallPathReport BuildCallPaths(const CallPathAggregator& agg, recorder::ProcessTracker& tracker,
                              const std::vector<std::string>& names) {
  CallPathReport out;
  // The symbolizer works on keys; each key knows its function through its stats map.
  std::map<recorder::StackKey, std::pair<uint32_t, const PathStats*>> by_key;
  recorder::SampleAggregator keys;
  for (const auto& [func, paths] : agg.paths())
    for (const auto& [key, st] : paths) {
      // Paths of two functions never share a key: frame 0 is the traced function's RET.
      by_key[key] = {func, &st};
      keys.AddKey(key, st.calls);
    }
  std::vector<std::pair<std::vector<uint32_t>, CallPath>> built;
  recorder::SymbolizeOptions opts;
  opts.fill = [&](const recorder::StackKey& key, profile::Sample* s) {
    auto it = by_key.find(key);
    if (it == by_key.end()) return;
    const PathStats& st = *it->second.second;
    s->count = static_cast<int64_t>(st.calls);
    s->nanos = static_cast<int64_t>(st.total_ns);
    s->max_nanos = static_cast<int64_t>(st.max_ns);
    s->num_labels.erase("tid");
    CallPath p;
    uint32_t func = it->second.first;
    p.function = func < names.size() ? names[func] : "?";
    p.pid = key.pid;
    p.stats = st;
    for (const auto& [k, v] : key.labels) p.labels[k] = v;
    if (!unwind::StopIsWhole(key.stop_reason)) p.stop = unwind::StopReasonName(key.stop_reason);
    built.push_back({s->locations, std::move(p)});
  };
  out.profile = recorder::SymbolizeStacks(keys, tracker, opts);
  out.profile.count_type = "calls";
  out.profile.nanos_type = "total";
  out.profile.max_nanos_type = "max";
  out.profile.period_nanos = 1;
  for (auto& [locs, p] : built) {
    for (uint32_t li : locs) {
      if (li >= out.profile.locations.size()) continue;
      for (const auto& line : out.profile.locations[li].lines) p.frames.push_back(line.function);
    }
    out.paths.push_back(std::move(p));
  }
  std::sort(out.paths.begin(), out.paths.end(), [](const CallPath& a, const CallPath& b) {
    if (a.function != b.function) return a.function < b.function;
    return a.stats.total_ns > b.stats.total_ns;
  });
  return out;
}

nlohmann::json CallPathsJson(const CallPathReport& r) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& p : r.paths) {
    nlohmann::json hist = nlohmann::json::array();
    for (size_t b = 0; b < p.stats.hist.size(); b++)
      if (p.stats.hist[b] != 0) hist.push_back({{"low_ns", BucketLow(b)}, {"high_ns", BucketHigh(b)}, {"count", p.stats.hist[b]}});
    arr.push_back({{"function", p.function},
                   {"pid", p.pid},
                   {"frames", p.frames},
                   {"labels", p.labels},
                   {"stop", p.stop},
                   {"calls", p.stats.calls},
                   {"total_ns", p.stats.total_ns},
                   {"max_ns", p.stats.max_ns},
                   {"histogram", hist}});
  }
  return arr;
}

std::string CallPathsText(const CallPathReport& r, size_t per_function) {
  std::string out;
  std::string cur;
  size_t shown = 0;
  std::map<std::string, uint64_t> fn_total;
  for (const auto& p : r.paths) fn_total[p.function] += p.stats.total_ns;
  for (const auto& p : r.paths) {
    if (p.function != cur) {
      cur = p.function;
      shown = 0;
      out += fmt::format("\nCall paths of {} (by total time):\n", cur);
    }
    if (shown++ >= per_function) continue;
    double share = fn_total[cur] ? 100.0 * static_cast<double>(p.stats.total_ns) / static_cast<double>(fn_total[cur]) : 0;
    std::string path;
    // Root first, without the traced function itself (it is the header), at most 6 callers.
    size_t n = p.frames.size();
    size_t first = n > 7 ? n - 6 : 1;
    for (size_t i = n; i-- > first;) {
      if (p.frames[i] == "runtime.goexit") continue;
      path += (path.empty() ? "" : " > ") + p.frames[i];
    }
    if (first > 1) path = "... > " + path;
    std::string labels;
    for (const auto& [k, v] : p.labels) labels += (labels.empty() ? " {" : ", ") + k + "=" + v;
    if (!labels.empty()) labels += "}";
    out += fmt::format("  {:5.1f}%  calls {:<8} total {:<9} max {:<9} {}{}{}\n", share, p.stats.calls,
                       FormatNanos(static_cast<double>(p.stats.total_ns)), FormatNanos(static_cast<double>(p.stats.max_ns)),
                       path.empty() ? "(no caller)" : path, p.stop.empty() ? "" : " [stopped: " + p.stop + "]", labels);
  }
  return out;
}

}  // namespace sb::exitprobe
