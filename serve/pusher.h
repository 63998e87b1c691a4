// --push: every window the agent writes goes to a Pyroscope server. Windows wait in the disk
// spool (DIR/spool) and leave it only after the backend's 2xx (or a final 4xx refusal), one
// at a time and oldest first, so they arrive in order and, after a successful answer, never
// again (also across restarts: the spool is reloaded). Failed attempts back off
// exponentially with jitter. One log line per event.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "base/result.h"
#include "serve/stats.h"

namespace sb::serve {

struct PushOptions {
  std::string url;          // --push (the Pyroscope server)
  std::string app_name;     // --app-name; empty: each window's executable name
  std::string tenant;       // --tenant: X-Scope-OrgID
  std::string token_file;   // --token-file: bearer token, read again for every attempt
  std::string spool_dir;    // DIR/spool
  uint64_t spool_max_bytes = 256ull << 20;
  double initial_backoff_seconds = 1;
  double max_backoff_seconds = 300;
  double timeout_seconds = 30;  // per attempt
  std::function<void(const std::string&)> log;  // stderr when empty
};

// One written window (the agent's WindowFile).
struct WindowToPush {
  std::string profile_path;  // gzip pprof
  uint32_t pid = 0;
  std::string exe;
  std::map<std::string, std::string> labels;
  int64_t start_unix_ns = 0;
  int64_t duration_ns = 0;
};

class Pusher {
 public:
  // Checks the options (URL, token file readable), opens the spool and starts the sender.
  static Result<std::unique_ptr<Pusher>> Start(PushOptions options);
  ~Pusher();
  Pusher(const Pusher&) = delete;
  Pusher& operator=(const Pusher&) = delete;

  // Spools the window (the sender picks it up); errors only when the spool cannot take it.
  Status Enqueue(const WindowToPush& window);
  PushStats Stats() const;
  // True once the spool is empty (for tests and benchmarks).
  bool WaitEmpty(std::chrono::milliseconds timeout) const;
  // Lets the attempt in flight get its answer for up to 5 s, then cancels it (it stays spooled),
  // and joins the sender. Idempotent.
  void Stop();

  struct Impl;

 private:
  explicit Pusher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Validates the push flags before anything else starts (the CLI calls it first).
Status CheckPushOptions(const PushOptions& options);

}  // namespace sb::serve
