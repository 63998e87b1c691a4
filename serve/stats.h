// Counters kept by the server and the pusher themselves, shown on /metrics next to the
// source's.
#pragma once

#include <cstdint>
#include <map>

namespace sb::serve {

struct PushStats {
  uint64_t successes = 0;        // windows the backend accepted (2xx)
  uint64_t failures = 0;         // attempts that failed (network, timeout, 5xx, 408, 429, 401, 403)
  uint64_t rejected = 0;         // windows the backend refused for good (other 4xx): dropped, not retried
  uint64_t dropped = 0;          // windows dropped from a full spool (oldest first)
  uint64_t backlog_windows = 0;  // in the spool now
  uint64_t backlog_bytes = 0;
};

struct ServeStats {
  std::map<int, uint64_t> profile_requests_by_code;  // answered /debug/pprof/profile requests
  uint64_t profile_requests_in_flight = 0;
};

}  // namespace sb::serve
