#include "agent/merge.h"

#include <algorithm>
#include <ctime>
#include <regex>

#include "base/file_util.h"
#include "profile/pprof_reader.h"

namespace sb::agent {

Result<std::vector<IndexEntry>> SelectWindows(const std::string& dir, const MergeQuery& q) {
  std::regex re;
  if (!q.exe_regex.empty()) {
    try {
      re = std::regex(q.exe_regex, std::regex::extended);
    } catch (const std::regex_error& e) {
      return MakeError("bad --exe regular expression '" + q.exe_regex + "': " + e.what());
    }
  }
  std::vector<IndexEntry> out;
  for (auto& e : ReadIndex(dir, nullptr)) {
    if (q.pid != 0 && e.pid != q.pid) continue;
    if (!q.exe_regex.empty() && !std::regex_search(e.exe, re)) continue;
    int64_t end = e.start_unix_ns + e.duration_ns;
    if (q.from_unix_ns != 0 && end <= q.from_unix_ns) continue;
    if (q.to_unix_ns != 0 && e.start_unix_ns >= q.to_unix_ns) continue;
    out.push_back(std::move(e));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const IndexEntry& a, const IndexEntry& b) { return a.start_unix_ns < b.start_unix_ns; });
  return out;
}

profile::ProfileData MergeProfiles(const std::vector<profile::ProfileData>& profiles) {
  profile::ProfileBuilder b;
  int64_t start = 0, end = 0, period = 0;
  for (const auto& p : profiles) {
    std::vector<int> mapping(p.mappings.size());
    for (size_t i = 0; i < p.mappings.size(); i++) mapping[i] = b.AddMapping(p.mappings[i]);
    std::vector<uint32_t> loc(p.locations.size());
    for (size_t i = 0; i < p.locations.size(); i++) {
      profile::Location l = p.locations[i];
      l.mapping_index = l.mapping_index >= 0 && static_cast<size_t>(l.mapping_index) < mapping.size()
                            ? mapping[l.mapping_index]
                            : -1;
      loc[i] = b.AddLocation(l);
    }
    for (const auto& s : p.samples) {
      profile::Sample m = s;
      m.locations.clear();
      for (uint32_t id : s.locations)
        if (id < loc.size()) m.locations.push_back(loc[id]);
      b.AddSample(std::move(m));
    }
    if (p.start_time_nanos != 0 && (start == 0 || p.start_time_nanos < start)) start = p.start_time_nanos;
    end = std::max(end, p.start_time_nanos + p.duration_nanos);
    if (period == 0) period = p.period_nanos;
  }
  profile::ProfileData d = b.Take();
  d.start_time_nanos = start;
  d.duration_nanos = end > start ? end - start : 0;
  d.period_nanos = period;
  if (!profiles.empty()) {
    d.count_type = profiles[0].count_type;
    d.nanos_type = profiles[0].nanos_type;
  }
  return d;
}

Result<MergeResult> MergeWindows(const std::string& dir, const MergeQuery& q) {
  auto sel = SelectWindows(dir, q);
  if (!sel.ok()) return sel.take_error();
  MergeResult r;
  std::vector<profile::ProfileData> profiles;
  for (const auto& e : *sel) {
    std::string path = dir + "/" + e.path;
    auto bytes = ReadFile(path);
    if (!bytes.ok()) {
      r.skipped.push_back(bytes.error());
      continue;
    }
    auto p = profile::ReadPprofGz(*bytes);
    if (!p.ok()) {
      r.skipped.push_back(path + ": " + p.error());
      continue;
    }
    profiles.push_back(std::move(*p));
  }
  if (profiles.empty()) return MakeError("no window in " + dir + " matches (see " + dir + "/index.jsonl)");
  r.windows = profiles.size();
  r.profile = MergeProfiles(profiles);
  r.profile.comments.push_back("switchback merge of " + std::to_string(r.windows) + " window(s) from " + dir);
  return r;
}

Result<int64_t> ParseTime(const std::string& text) {
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos && text.size() <= 12)
    return std::stoll(text) * 1000000000LL;
  struct tm tm {};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr || !(*end == '\0' || ((*end == 'Z' || *end == 'z') && end[1] == '\0')))
    return MakeError("bad time '" + text + "' (use 2026-12-01T21:00:00Z, UTC, or unix seconds)");
  return static_cast<int64_t>(timegm(&tm)) * 1000000000LL;
}

}  // namespace sb::agent
