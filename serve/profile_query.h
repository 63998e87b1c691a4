// The query of GET /debug/pprof/profile: pid=PID or exe=REGEX, and seconds=N. Every value
// comes from the network, so each is checked here and a bad one becomes a one-line message
// (answered with 400); nothing in a query ever names a file.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "serve/profile_source.h"

namespace sb::serve {

// Decoded query parameters (the same type as httplib::Params).
using QueryParams = std::multimap<std::string, std::string>;

struct QueryLimits {
  int64_t max_seconds = 300;      // beyond: "profile duration exceeds server's WriteTimeout"
  size_t max_exe_regex = 256;     // bytes
};

struct ProfileQuery {
  uint32_t pid = 0;        // set when pid= was given
  std::string exe_regex;   // set when exe= was given (POSIX extended syntax, no back-references)
  int64_t seconds = 30;    // Go's default
};

// Parses and checks the parameters. Unknown parameters are ignored (as Go's handler does);
// a repeated pid/exe/seconds, both or neither of pid and exe, a pid outside 1..4194304, a
// regex that does not compile, or seconds that is not a positive integer are errors.
Result<ProfileQuery> ParseProfileQuery(const QueryParams& params, const QueryLimits& limits);

// A compiled exe= pattern (glibc regcomp, REG_EXTENDED | REG_NOSUB): matching has no
// exponential backtracking since back-references are refused when compiling.
class ExeMatcher {
 public:
  static Result<ExeMatcher> Compile(const std::string& pattern);
  ExeMatcher(ExeMatcher&& o) noexcept;
  ExeMatcher& operator=(ExeMatcher&&) = delete;
  ExeMatcher(const ExeMatcher&) = delete;
  ~ExeMatcher();
  bool Matches(const std::string& exe) const;  // searched anywhere in the path

 private:
  ExeMatcher() = default;
  void* re_ = nullptr;  // regex_t*
};

// An anchored regex matching exactly one of EXES (metacharacters escaped): what the sampler
// gets for exe=, so it never evaluates a pattern from the network.
std::string ExactAlternation(const std::vector<std::string>& exes);

}  // namespace sb::serve
