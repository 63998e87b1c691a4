#include "agent/window_index.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/file_util.h"

namespace sb::agent {

using nlohmann::json;

std::string IndexLine(const IndexEntry& e) {
  json j;
  j["path"] = e.path;
  j["start_unix_ns"] = e.start_unix_ns;
  j["duration_ns"] = e.duration_ns;
  j["pid"] = e.pid;
  j["exe"] = e.exe;
  j["labels"] = e.labels;
  j["samples"] = e.samples;
  j["whole_share"] = e.whole_share;
  j["stop_reasons"] = e.stop_reasons;
  // Invalid UTF-8 in a label (an odd executable name) is replaced, never thrown.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<IndexEntry> ParseIndexLine(std::string_view line) {
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return MakeError("index line is not a JSON object");
  IndexEntry e;
  auto str = [&](const char* k, std::string* out) -> bool {
    auto it = j.find(k);
    if (it == j.end() || !it->is_string()) return false;
    *out = it->get<std::string>();
    return true;
  };
  auto i64 = [&](const char* k, int64_t* out) -> bool {
    auto it = j.find(k);
    if (it == j.end() || !it->is_number_integer()) return false;
    *out = it->get<int64_t>();
    return true;
  };
  int64_t pid = 0, samples = 0;
  if (!str("path", &e.path) || e.path.empty()) return MakeError("index line has no \"path\"");
  if (!i64("start_unix_ns", &e.start_unix_ns) || !i64("duration_ns", &e.duration_ns) || e.duration_ns < 0)
    return MakeError("index line for " + e.path + " has no window times");
  if (!i64("pid", &pid) || pid <= 0 || pid > 0xffffffffLL) return MakeError("index line for " + e.path + " has no pid");
  e.pid = static_cast<uint32_t>(pid);
  str("exe", &e.exe);
  if (i64("samples", &samples) && samples > 0) e.samples = static_cast<uint64_t>(samples);
  if (auto it = j.find("whole_share"); it != j.end() && it->is_number()) e.whole_share = it->get<double>();
  if (auto it = j.find("labels"); it != j.end() && it->is_object())
    for (auto& [k, v] : it->items())
      if (v.is_string()) e.labels[k] = v.get<std::string>();
  if (auto it = j.find("stop_reasons"); it != j.end() && it->is_object())
    for (auto& [k, v] : it->items())
      if (v.is_number_unsigned()) e.stop_reasons[k] = v.get<uint64_t>();
  return e;
}

std::vector<IndexEntry> ReadIndex(const std::string& dir, size_t* bad) {
  std::vector<IndexEntry> out;
  if (bad) *bad = 0;
  auto text = ReadFile(dir + "/index.jsonl");
  if (!text.ok()) return out;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto e = ParseIndexLine(line);
    if (e.ok())
      out.push_back(std::move(*e));
    else if (bad)
      (*bad)++;
  }
  return out;
}

Status AppendIndex(const std::string& dir, const IndexEntry& e) {
  std::string path = dir + "/index.jsonl";
  std::string line = IndexLine(e) + "\n";
  int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return MakeError("cannot open " + path + ": " + strerror(errno));
  // One write of a whole line with O_APPEND: a reader sees the line whole or not at all
  // (a short write on a full disk leaves a damaged last line, which readers skip).
  ssize_t n = write(fd, line.data(), line.size());
  int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(line.size()))
    return MakeError("cannot append to " + path + ": " + (n < 0 ? strerror(err) : "short write"));
  return Status::Ok();
}

Status WriteIndex(const std::string& dir, const std::vector<IndexEntry>& entries) {
  std::string text;
  for (const auto& e : entries) text += IndexLine(e) + "\n";
  return WriteFileAtomic(dir + "/index.jsonl", text);
}

}  // namespace sb::agent
