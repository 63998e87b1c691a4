#include "serve/http_server.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <set>
#include <thread>

#include "base/build_info.h"
#include "base/kernel_features.h"
#include "profile/writers.h"
#include "serve/index_page.h"
#include "serve/metrics_page.h"

namespace sb::serve {

struct Server::Impl {
  ProfileSource* source = nullptr;
  ServerOptions opt;
  httplib::Server http;
  std::thread thread;
  int port = 0;
  std::atomic<bool> stopping{false};
  std::atomic<int> in_flight{0};
  mutable std::mutex mu;
  std::map<int, uint64_t> by_code;  // guarded by mu
  bool stopped = false;
  // For switchback_build_info: probed once at start, not at every scrape (they do not change,
  // and probing loads BPF programs).
  BuildInfo build;
  KernelFeatures kernel;

  void Log(const std::string& line) const {
    if (opt.log) opt.log(line);
    else fprintf(stderr, "%s\n", line.c_str());
  }
  void Count(int code) {
    std::lock_guard<std::mutex> l(mu);
    by_code[code]++;
  }

  // Go's serveError: plain text, one line, X-Go-Pprof so `go tool pprof` prints the text.
  static void Error(httplib::Response& res, int status, const std::string& text) {
    res.status = status;
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("X-Go-Pprof", "1");
    res.set_content(text + "\n", "text/plain; charset=utf-8");
  }

  void HandleProfile(const httplib::Request& req, httplib::Response& res);
  void HandleIndex(const httplib::Request& req, httplib::Response& res);
  void HandleMetrics(const httplib::Request& req, httplib::Response& res);
};

namespace {

std::string Describe(const httplib::Request& req) {
  std::string q;
  for (const auto& [k, v] : req.params) q += (q.empty() ? "?" : "&") + k + "=" + v;
  // Keep the log line one line whatever the client sent.
  for (char& c : q) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  if (q.size() > 300) q = q.substr(0, 300) + "...";
  return req.method + " " + req.path + q + " from " + req.remote_addr;
}

// Holds one of the bounded profile slots for the length of a request.
class Slot {
 public:
  Slot(std::atomic<int>& n, int max) : n_(n) {
    int cur = n_.load();
    while (cur < max && !n_.compare_exchange_weak(cur, cur + 1)) {
    }
    held_ = cur < max;
  }
  ~Slot() {
    if (held_) n_--;
  }
  bool held() const { return held_; }

 private:
  std::atomic<int>& n_;
  bool held_ = false;
};

}  // namespace

void Server::Impl::HandleProfile(const httplib::Request& req, httplib::Response& res) {
  auto t0 = std::chrono::steady_clock::now();
  auto finish = [&](const std::string& what) {
    Count(res.status);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    char buf[96];
    snprintf(buf, sizeof buf, ": %d, %zu bytes, %.2f s", res.status, res.body.size(), secs);
    Log("serve: " + Describe(req) + buf + (what.empty() ? "" : " (" + what + ")"));
  };
  res.set_header("X-Content-Type-Options", "nosniff");
  auto q = ParseProfileQuery(req.params, opt.limits);
  if (!q.ok()) {
    Error(res, 400, q.error());
    return finish(q.error());
  }
  Slot slot(in_flight, opt.max_concurrent_profiles);
  if (!slot.held()) {
    std::string msg = "too many profile requests at once (at most " + std::to_string(opt.max_concurrent_profiles) + ")";
    Error(res, 429, msg);
    return finish(msg);
  }
  CaptureFilter filter;
  std::vector<ProcessInfo> procs = source->Processes();
  if (q->pid != 0) {
    bool found = false, exited = false;
    for (const auto& p : procs) {
      if (p.pid != q->pid) continue;
      found = true;
      exited = p.exited;
    }
    if (!found || exited) {
      std::string msg = found ? "process " + std::to_string(q->pid) + " has exited"
                              : "no followed process with pid " + std::to_string(q->pid);
      Error(res, 404, msg);
      return finish(msg);
    }
    filter.pid = q->pid;
  } else {
    auto m = ExeMatcher::Compile(q->exe_regex);  // compiled by the parser already: cannot fail
    if (!m.ok()) {
      Error(res, 400, m.error());
      return finish(m.error());
    }
    std::set<std::string> exes;
    for (const auto& p : procs) {
      if (!p.exited && m->Matches(p.exe)) exes.insert(p.exe);
    }
    if (exes.empty()) {
      std::string msg = "no followed process matches exe=" + q->exe_regex;
      Error(res, 404, msg);
      return finish(msg);
    }
    // The sampler only ever sees literal paths, never the client's pattern.
    filter.exe_regex = ExactAlternation(std::vector<std::string>(exes.begin(), exes.end()));
  }
  auto data = source->Capture(filter, std::chrono::seconds(q->seconds), &stopping);
  if (!data.ok()) {
    Error(res, 500, "Could not capture the profile: " + data.error());
    return finish(data.error());
  }
  auto gz = profile::WritePprofGz(*data);
  if (!gz.ok()) {
    Error(res, 500, "Could not write the profile: " + gz.error());
    return finish(gz.error());
  }
  res.status = 200;
  res.set_header("Content-Disposition", "attachment; filename=\"profile\"");
  res.set_content(std::move(*gz), "application/octet-stream");
  finish("");
}

void Server::Impl::HandleIndex(const httplib::Request& req, httplib::Response& res) {
  res.set_header("X-Content-Type-Options", "nosniff");
  std::vector<ProcessInfo> procs = source->Processes();
  std::string format = req.has_param("format") ? req.get_param_value("format") : "";
  if (format == "json") {
    res.set_content(RenderIndexJson(procs), "application/json");
  } else if (format.empty() || format == "html") {
    res.set_content(RenderIndexHtml(procs), "text/html; charset=utf-8");
  } else {
    Error(res, 400, "invalid value for \"format\" - must be html or json");
  }
}

void Server::Impl::HandleMetrics(const httplib::Request& req, httplib::Response& res) {
  MetricsInput in;
  in.build = build;
  in.kernel = kernel;
  in.source = source->Counters();
  if (opt.push_stats) in.push = opt.push_stats();
  {
    std::lock_guard<std::mutex> l(mu);
    in.serve.profile_requests_by_code = by_code;
  }
  in.serve.profile_requests_in_flight = static_cast<uint64_t>(in_flight.load());
  if (auto self = ReadSelfUsage(); self.ok()) in.self = *self;
  res.set_content(RenderMetrics(in), "text/plain; version=0.0.4; charset=utf-8");
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { Stop(); }

int Server::port() const { return impl_->port; }

ServeStats Server::Stats() const {
  ServeStats s;
  std::lock_guard<std::mutex> l(impl_->mu);
  s.profile_requests_by_code = impl_->by_code;
  s.profile_requests_in_flight = static_cast<uint64_t>(impl_->in_flight.load());
  return s;
}

void Server::Stop() {
  {
    std::lock_guard<std::mutex> l(impl_->mu);
    if (impl_->stopped) return;
    impl_->stopped = true;
  }
  impl_->stopping = true;
  impl_->http.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->Log("serve: stopped listening on " + impl_->opt.listen.host + ":" + std::to_string(impl_->port));
}

Result<std::unique_ptr<Server>> Server::Start(ProfileSource* source, ServerOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->source = source;
  impl->opt = std::move(options);
  if (impl->opt.max_concurrent_profiles < 1) return MakeError("at least one concurrent profile request is needed");
  impl->build = GetBuildInfo();
  impl->kernel = ProbeKernelFeatures();
  Impl* s = impl.get();
  // Threads: every profile slot, plus some for the index, /metrics and the 429 answers, so a
  // full set of profile requests never stalls a scrape.
  size_t threads = static_cast<size_t>(s->opt.max_concurrent_profiles) + 8;
  s->http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  s->http.set_keep_alive_timeout(2);
  s->http.set_payload_max_length(64 * 1024);  // no route takes a body
  s->http.set_read_timeout(5);
  s->http.set_write_timeout(10);

  auto guard = [s](auto fn) {
    return [s, fn](const httplib::Request& req, httplib::Response& res) {
      try {
        (s->*fn)(req, res);
      } catch (const std::exception& e) {
        Impl::Error(res, 500, std::string("internal error: ") + e.what());
      }
    };
  };
  s->http.Get("/debug/pprof/profile", guard(&Impl::HandleProfile));
  s->http.Get("/debug/pprof/", guard(&Impl::HandleIndex));
  s->http.Get("/metrics", guard(&Impl::HandleMetrics));
  s->http.Get("/debug/pprof", [](const httplib::Request&, httplib::Response& res) {
    res.set_redirect("/debug/pprof/", 301);
  });
  // Everything else: 404 with a one-line body (Go's "Unknown profile" under /debug/pprof/).
  s->http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    int status = res.status;
    std::string text = status == 404 ? (req.path.rfind("/debug/pprof/", 0) == 0 ? "Unknown profile" : "not found")
                                     : "HTTP status " + std::to_string(status);
    Impl::Error(res, status, text);
  });

  const std::string& host = s->opt.listen.host;
  if (s->opt.listen.port == 0) {
    s->port = s->http.bind_to_any_port(host);
    if (s->port <= 0) return MakeError("--listen " + s->opt.listen.ToString() + ": cannot bind");
  } else {
    if (!s->http.bind_to_port(host, s->opt.listen.port)) {
      return MakeError("--listen " + s->opt.listen.ToString() + ": cannot bind (in use, or not an address of this host)");
    }
    s->port = s->opt.listen.port;
  }
  s->thread = std::thread([s] { s->http.listen_after_bind(); });
  // httplib's stop() does nothing until the listening thread has marked itself running (it
  // would then block in accept() for good): wait for that before anyone can call Stop().
  for (int i = 0; i < 5000 && !s->http.is_running(); i++) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ListenAddress actual = s->opt.listen;
  actual.port = s->port;
  s->Log("serve: listening on http://" + actual.ToString() + " (/debug/pprof/, /debug/pprof/profile, /metrics)" +
         (actual.loopback ? "" : "; not loopback: profiles are visible to the network"));
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

}  // namespace sb::serve
