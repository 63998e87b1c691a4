// The agent's HTTP endpoint (cpp-httplib): /debug/pprof/profile with Go net/http/pprof's
// contract, /debug/pprof/ (the followed processes), /metrics. Every route is fixed: no
// request path reaches the file system. Profile requests are bounded in number (429 beyond)
// and in length (seconds capped, 400 beyond), every malformed query gets 400.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/result.h"
#include "serve/listen_address.h"
#include "serve/profile_query.h"
#include "serve/profile_source.h"
#include "serve/stats.h"

namespace sb::serve {

using LogFn = std::function<void(const std::string&)>;

struct ServerOptions {
  ListenAddress listen;
  int max_concurrent_profiles = 4;
  QueryLimits limits;
  // Push counters for /metrics; empty when not pushing.
  std::function<PushStats()> push_stats;
  LogFn log;  // one line per event (listening, each profile request); stderr when empty
};

class Server {
 public:
  // Binds (port 0: the kernel picks one, see port()) and starts serving on its own threads.
  static Result<std::unique_ptr<Server>> Start(ProfileSource* source, ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  int port() const;
  ServeStats Stats() const;
  // Ends running captures early, stops listening, joins the threads. Idempotent.
  void Stop();

  struct Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sb::serve
