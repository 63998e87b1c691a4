#include "agent/retention.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>

#include "agent/window_index.h"
#include "agent/window_naming.h"

namespace sb::agent {

namespace fs = std::filesystem;

std::vector<StoredWindow> ListWindows(const std::string& dir) {
  std::vector<StoredWindow> out;
  std::error_code ec;
  for (fs::directory_iterator d(dir, ec), end; !ec && d != end; d.increment(ec)) {
    if (!d->is_directory(ec)) continue;
    std::string day = d->path().filename().string();
    std::error_code ec2;
    for (fs::directory_iterator f(d->path(), ec2), fend; !ec2 && f != fend; f.increment(ec2)) {
      std::string rel = day + "/" + f->path().filename().string();
      auto name = ParseWindowRelativePath(rel);
      if (!name) continue;
      std::error_code ec3;
      uint64_t size = f->file_size(ec3);
      if (ec3) continue;
      struct stat st {};
      int64_t written = stat(f->path().c_str(), &st) == 0 ? static_cast<int64_t>(st.st_mtime) : name->start_unix_s;
      out.push_back({rel, name->start_unix_s, written, size});
    }
  }
  std::sort(out.begin(), out.end(), [](const StoredWindow& a, const StoredWindow& b) {
    return a.start_unix_s != b.start_unix_s ? a.start_unix_s < b.start_unix_s : a.rel_path < b.rel_path;
  });
  return out;
}

uint64_t DiskUsage(const std::string& dir) {
  uint64_t total = 0;
  for (const auto& w : ListWindows(dir)) total += w.bytes;
  std::error_code ec;
  uint64_t idx = fs::file_size(fs::path(dir) / "index.jsonl", ec);
  if (!ec) total += idx;
  return total;
}

RetentionResult ApplyRetention(const std::string& dir, const RetentionPolicy& policy, int64_t now_unix_s) {
  RetentionResult r;
  if (policy.keep_ns <= 0 && policy.max_disk == 0) return r;
  std::vector<StoredWindow> windows = ListWindows(dir);
  uint64_t total = DiskUsage(dir);
  // A deleted window takes its index line with it: count that too, or a large index would
  // make the size limit delete more than it needs.
  std::vector<IndexEntry> index = ReadIndex(dir, nullptr);
  std::map<std::string, uint64_t> line_bytes;
  for (const auto& e : index) line_bytes[e.path] += IndexLine(e).size() + 1;
  std::set<std::string> gone;
  auto remove = [&](const StoredWindow& w) {
    std::error_code ec;
    if (!fs::remove(fs::path(dir) / w.rel_path, ec) && ec) {
      r.errors.push_back("cannot delete " + (fs::path(dir) / w.rel_path).string() + ": " + ec.message());
      return;
    }
    gone.insert(w.rel_path);
    r.deleted.push_back(w.rel_path);
    uint64_t freed = w.bytes + (line_bytes.count(w.rel_path) ? line_bytes[w.rel_path] : 0);
    total -= std::min(total, freed);
  };
  int64_t keep_s = policy.keep_ns / 1000000000;
  for (const auto& w : windows) {
    if (policy.keep_ns > 0 && w.written_unix_s < now_unix_s - keep_s) {
      remove(w);
    } else if (policy.max_disk > 0 && total > policy.max_disk) {
      remove(w);
    }
  }
  if (gone.empty()) return r;
  // The index shrinks with the files (the size check counted it too).
  std::vector<IndexEntry> kept;
  for (auto& e : index)
    if (!gone.count(e.path)) kept.push_back(std::move(e));
  if (auto st = WriteIndex(dir, kept); !st.ok()) r.errors.push_back(st.error());
  std::set<std::string> days;
  for (const auto& p : gone) days.insert(p.substr(0, p.find('/')));
  for (const auto& day : days) {
    std::error_code ec;
    if (fs::is_empty(fs::path(dir) / day, ec)) fs::remove(fs::path(dir) / day, ec);
  }
  return r;
}

size_t RemoveLeftoverTemporaries(const std::string& dir) {
  size_t n = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it.depth() > 1) continue;
    std::string name = it->path().filename().string();
    if (name.find(".tmp.") == std::string::npos) continue;
    std::error_code ec2;
    if (it->is_regular_file(ec2) && fs::remove(it->path(), ec2)) n++;
  }
  return n;
}

Result<int64_t> ParseDuration(const std::string& text) {
  if (text.empty()) return MakeError("empty duration");
  int64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = i;
    while (j < text.size() && isdigit(static_cast<unsigned char>(text[j]))) j++;
    if (j == i || j - i > 12) return MakeError("bad duration '" + text + "' (use e.g. 90s, 30m, 24h, 7d)");
    int64_t v = std::stoll(text.substr(i, j - i));
    std::string unit;
    while (j < text.size() && isalpha(static_cast<unsigned char>(text[j]))) unit += text[j++];
    int64_t mult = 0;
    if (unit == "ms") mult = 1000000LL;
    else if (unit == "s") mult = 1000000000LL;
    else if (unit == "m") mult = 60LL * 1000000000LL;
    else if (unit == "h") mult = 3600LL * 1000000000LL;
    else if (unit == "d") mult = 86400LL * 1000000000LL;
    else return MakeError("bad duration '" + text + "' (use e.g. 90s, 30m, 24h, 7d)");
    if (v > INT64_MAX / mult || total > INT64_MAX - v * mult) return MakeError("duration '" + text + "' is too long");
    total += v * mult;
    i = j;
  }
  return total;
}

Result<uint64_t> ParseSize(const std::string& text) {
  size_t j = 0;
  while (j < text.size() && isdigit(static_cast<unsigned char>(text[j]))) j++;
  if (j == 0 || j > 15) return MakeError("bad size '" + text + "' (use e.g. 1GiB, 500MiB, 10MB)");
  uint64_t v = std::stoull(text.substr(0, j));
  std::string unit = text.substr(j);
  uint64_t mult = 0;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "KiB" || unit == "K") mult = 1ULL << 10;
  else if (unit == "MiB" || unit == "M") mult = 1ULL << 20;
  else if (unit == "GiB" || unit == "G") mult = 1ULL << 30;
  else if (unit == "TiB" || unit == "T") mult = 1ULL << 40;
  else if (unit == "kB" || unit == "KB") mult = 1000ULL;
  else if (unit == "MB") mult = 1000000ULL;
  else if (unit == "GB") mult = 1000000000ULL;
  else if (unit == "TB") mult = 1000000000000ULL;
  else return MakeError("bad size '" + text + "' (use e.g. 1GiB, 500MiB, 10MB)");
  if (v > UINT64_MAX / mult) return MakeError("size '" + text + "' is too large");
  return v * mult;
}

}  // namespace sb::agent
