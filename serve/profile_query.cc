#include "serve/profile_query.h"

#include <regex.h>

#include <charconv>
#include <cstring>

namespace sb::serve {
namespace {

constexpr uint32_t kPidMax = 4194304;  // PID_MAX_LIMIT on 64-bit Linux

// The one value of KEY, or nullptr when absent; an error when it is repeated.
Result<const std::string*> Single(const QueryParams& params, const std::string& key) {
  auto [lo, hi] = params.equal_range(key);
  if (lo == hi) return static_cast<const std::string*>(nullptr);
  if (std::next(lo) != hi) return MakeError("parameter \"" + key + "\" given more than once");
  return &lo->second;
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

Result<ProfileQuery> ParseProfileQuery(const QueryParams& params, const QueryLimits& limits) {
  ProfileQuery q;
  auto pid = Single(params, "pid");
  if (!pid.ok()) return pid.take_error();
  auto exe = Single(params, "exe");
  if (!exe.ok()) return exe.take_error();
  auto sec = Single(params, "seconds");
  if (!sec.ok()) return sec.take_error();

  if (*sec != nullptr && !(*sec)->empty()) {
    const std::string& s = **sec;
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (!AllDigits(s) || ec != std::errc() || p != s.data() + s.size() || v <= 0) {
      return MakeError("invalid value for \"seconds\" - must be a positive integer");
    }
    if (v > limits.max_seconds) return MakeError("profile duration exceeds server's WriteTimeout");
    q.seconds = v;
  }
  if ((*pid == nullptr) == (*exe == nullptr)) {
    return MakeError("give exactly one of pid=PID or exe=REGEX");
  }
  if (*pid != nullptr) {
    const std::string& s = **pid;
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (!AllDigits(s) || s.size() > 7 || ec != std::errc() || p != s.data() + s.size() || v == 0 || v > kPidMax) {
      return MakeError("invalid value for \"pid\" - must be a process id from 1 to 4194304");
    }
    q.pid = static_cast<uint32_t>(v);
  } else {
    const std::string& s = **exe;
    if (s.empty()) return MakeError("invalid value for \"exe\" - empty pattern");
    if (s.size() > limits.max_exe_regex) {
      return MakeError("invalid value for \"exe\" - pattern longer than " + std::to_string(limits.max_exe_regex) +
                       " bytes");
    }
    auto m = ExeMatcher::Compile(s);
    if (!m.ok()) return m.take_error();
    q.exe_regex = s;
  }
  return q;
}

Result<ExeMatcher> ExeMatcher::Compile(const std::string& pattern) {
  if (pattern.find('\0') != std::string::npos) return MakeError("invalid value for \"exe\" - NUL byte");
  for (size_t i = 0; i + 1 < pattern.size(); i++) {
    if (pattern[i] == '\\') {
      if (pattern[i + 1] >= '1' && pattern[i + 1] <= '9') {
        return MakeError("invalid value for \"exe\" - back-references are not allowed");
      }
      i++;  // skip the escaped character
    }
  }
  auto* re = new regex_t;
  int rc = regcomp(re, pattern.c_str(), REG_EXTENDED | REG_NOSUB);
  if (rc != 0) {
    char buf[128];
    regerror(rc, re, buf, sizeof buf);
    delete re;
    return MakeError(std::string("invalid value for \"exe\" - ") + buf);
  }
  ExeMatcher m;
  m.re_ = re;
  return m;
}

ExeMatcher::ExeMatcher(ExeMatcher&& o) noexcept : re_(o.re_) { o.re_ = nullptr; }

ExeMatcher::~ExeMatcher() {
  if (re_ != nullptr) {
    regfree(static_cast<regex_t*>(re_));
    delete static_cast<regex_t*>(re_);
  }
}

bool ExeMatcher::Matches(const std::string& exe) const {
  return regexec(static_cast<const regex_t*>(re_), exe.c_str(), 0, nullptr, 0) == 0;
}

std::string ExactAlternation(const std::vector<std::string>& exes) {
  std::string out = "^(";
  for (size_t i = 0; i < exes.size(); i++) {
    if (i > 0) out += '|';
    for (char c : exes[i]) {
      if (std::strchr("\\^$.|?*+()[]{}", c) != nullptr && c != '\0') out += '\\';
      out += c;
    }
  }
  out += ")$";
  return out;
}

}  // namespace sb::serve
