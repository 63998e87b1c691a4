#include "agent/window_naming.h"

#include <ctime>
#include <string_view>

#include <fmt/format.h>

namespace sb::agent {

std::string SafeExeName(const std::string& exe) {
  std::string base = exe.substr(exe.rfind('/') == std::string::npos ? 0 : exe.rfind('/') + 1);
  std::string out;
  for (char c : base) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '+' || c == '-';
    out += ok ? c : '_';
    if (out.size() == 64) break;
  }
  if (out.empty() || out == "." || out == "..") out = "unknown";
  return out;
}

std::string WindowRelativePath(int64_t start_unix_ns, const std::string& exe, uint32_t pid, int seq) {
  time_t t = static_cast<time_t>(start_unix_ns / 1000000000);
  struct tm tm {};
  gmtime_r(&t, &tm);
  return fmt::format("{:04d}-{:02d}-{:02d}/{:02d}{:02d}{:02d}Z-{}-{}{}.pb.gz", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, SafeExeName(exe), pid,
                     seq > 0 ? fmt::format(".{}", seq) : "");
}

std::optional<WindowName> ParseWindowRelativePath(const std::string& rel) {
  size_t slash = rel.rfind('/');
  if (slash == std::string::npos || slash < 10) return std::nullopt;
  std::string_view day = std::string_view(rel).substr(slash - 10, 10);
  std::string_view file = std::string_view(rel).substr(slash + 1);
  auto digits = [](std::string_view s) {
    for (char c : s)
      if (c < '0' || c > '9') return false;
    return !s.empty();
  };
  if (day[4] != '-' || day[7] != '-' || !digits(day.substr(0, 4)) || !digits(day.substr(5, 2)) ||
      !digits(day.substr(8, 2)))
    return std::nullopt;
  constexpr std::string_view kExt = ".pb.gz";
  if (file.size() < 7 + 1 + kExt.size() || !file.ends_with(kExt) || !digits(file.substr(0, 6)) || file[6] != 'Z' ||
      file[7] != '-')
    return std::nullopt;
  std::string_view mid = file.substr(8, file.size() - 8 - kExt.size());  // EXE-PID or EXE-PID.SEQ
  int seq = 0;
  if (size_t dot = mid.rfind('.'); dot != std::string_view::npos && dot > mid.rfind('-') && mid.rfind('-') != std::string_view::npos) {
    std::string_view s = mid.substr(dot + 1);
    if (!digits(s) || s.size() > 4 || s[0] == '0') return std::nullopt;
    for (char c : s) seq = seq * 10 + (c - '0');
    mid = mid.substr(0, dot);
  }
  size_t dash = mid.rfind('-');
  if (dash == std::string_view::npos || dash == 0 || !digits(mid.substr(dash + 1)) || mid.size() - dash > 11)
    return std::nullopt;
  struct tm tm {};
  auto num = [](std::string_view s) {
    int v = 0;
    for (char c : s) v = v * 10 + (c - '0');
    return v;
  };
  tm.tm_year = num(day.substr(0, 4)) - 1900;
  tm.tm_mon = num(day.substr(5, 2)) - 1;
  tm.tm_mday = num(day.substr(8, 2));
  tm.tm_hour = num(file.substr(0, 2));
  tm.tm_min = num(file.substr(2, 2));
  tm.tm_sec = num(file.substr(4, 2));
  if (tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
    return std::nullopt;
  unsigned long long pid = std::stoull(std::string(mid.substr(dash + 1)));
  if (pid == 0 || pid > 0xffffffffULL) return std::nullopt;
  WindowName w;
  w.start_unix_s = static_cast<int64_t>(timegm(&tm));
  w.exe.assign(mid.substr(0, dash));
  w.pid = static_cast<uint32_t>(pid);
  w.seq = seq;
  return w;
}

}  // namespace sb::agent
