#include "serve/pusher.h"

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>

#include "base/file_util.h"
#include "serve/pyroscope_ingest.h"
#include "serve/spool.h"

namespace sb::serve {

struct Pusher::Impl {
  PushOptions opt;
  std::string endpoint;
  std::unique_ptr<Spool> spool;
  mutable std::mutex mu;
  mutable std::condition_variable cv;
  bool stop = false;
  std::atomic<bool> cancel{false};
  uint64_t in_flight = 0;  // seq being sent, 0: none
  PushStats stats;
  std::thread thread;
  std::mt19937_64 rng{std::random_device{}()};

  void Log(const std::string& line) const {
    if (opt.log) opt.log(line);
    else fprintf(stderr, "%s\n", line.c_str());
  }
  void Refresh() {
    stats.backlog_windows = spool->windows();
    stats.backlog_bytes = spool->bytes();
  }
  Result<std::string> Token() const {
    if (opt.token_file.empty()) return std::string();
    auto t = ReadFile(opt.token_file);
    if (!t.ok()) return t.take_error();
    std::string s = *t;
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    if (s.empty()) return MakeError(opt.token_file + ": empty token");
    if (s.find_first_of("\r\n") != std::string::npos) return MakeError(opt.token_file + ": token has several lines");
    return s;
  }
  // Exponential backoff with jitter: base * 2^(failures-1), capped, times a random 0.5..1.
  std::chrono::milliseconds Backoff(int failures) {
    double d = opt.initial_backoff_seconds;
    for (int i = 1; i < failures && d < opt.max_backoff_seconds; i++) d *= 2;
    d = std::min(d, opt.max_backoff_seconds);
    d *= std::uniform_real_distribution<double>(0.5, 1.0)(rng);
    return std::chrono::milliseconds(static_cast<int64_t>(d * 1000));
  }
  void Run();
};

void Pusher::Impl::Run() {
  int failures = 0;
  auto next_attempt = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> l(mu);
  while (!stop) {
    std::optional<SpoolItem> item = spool->Oldest();
    if (!item.has_value()) {
      cv.wait(l, [&] { return stop || spool->windows() > 0; });
      continue;
    }
    if (std::chrono::steady_clock::now() < next_attempt) {
      cv.wait_until(l, next_attempt, [&] { return stop; });
      continue;
    }
    in_flight = item->seq;
    l.unlock();
    IngestOutcome out;
    auto body = ReadFile(item->data_path);
    auto token = Token();
    auto t0 = std::chrono::steady_clock::now();
    if (!body.ok()) {
      out.error = body.error();  // the spooled copy is gone: nothing to retry
    } else if (!token.ok()) {
      out.retry = true;
      out.error = token.error();
    } else {
      IngestRequest r;
      r.endpoint = endpoint;
      r.name = item->name;
      r.from = item->from;
      r.until = item->until;
      r.body = std::move(*body);
      r.tenant = opt.tenant;
      r.token = *token;
      r.timeout_seconds = opt.timeout_seconds;
      out = PostIngest(r, &cancel);
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    l.lock();
    in_flight = 0;
    std::string what = "window " + std::to_string(item->seq) + " (" + item->name + ", pid " + std::to_string(item->pid) +
                       ", " + std::to_string(item->bytes) + " bytes)";
    char took[32];
    snprintf(took, sizeof took, " in %.0f ms", ms);
    if (out.delivered) {
      Status st = spool->Remove(item->seq);
      stats.successes++;
      failures = 0;
      next_attempt = std::chrono::steady_clock::now();
      Refresh();
      Log("push: delivered " + what + took + "; " + std::to_string(spool->windows()) + " left in the spool" +
          (st.ok() ? "" : " (" + st.error() + ")"));
    } else if (out.retry) {
      if (stop) break;  // cancelled by Stop(): stays spooled, not a failure of the backend
      stats.failures++;
      failures++;
      auto wait = Backoff(failures);
      next_attempt = std::chrono::steady_clock::now() + wait;
      char retry[64];
      snprintf(retry, sizeof retry, "; retry %d in %.1f s", failures, wait.count() / 1000.0);
      Log("push: failed " + what + ": " + out.error + took + retry + ", " + std::to_string(spool->windows()) +
          " windows spooled");
    } else {
      (void)spool->Remove(item->seq);
      stats.rejected++;
      Refresh();
      Log("push: backend refused " + what + ": " + out.error + "; dropped (not retried)");
    }
    cv.notify_all();
  }
}

Status CheckPushOptions(const PushOptions& o) {
  auto ep = IngestEndpoint(o.url);
  if (!ep.ok()) return ep.take_error();
  if (o.spool_dir.empty()) return MakeError("--push needs a spool directory");
  if (o.spool_max_bytes < 1024) return MakeError("--spool-max must be at least 1KiB");
  if (!o.token_file.empty()) {
    auto t = ReadFile(o.token_file);
    if (!t.ok()) return MakeError("--token-file: " + t.error());
  }
  if (o.tenant.find_first_of("\r\n") != std::string::npos) return MakeError("--tenant: one line please");
  return Status::Ok();
}

Result<std::unique_ptr<Pusher>> Pusher::Start(PushOptions options) {
  Status st = CheckPushOptions(options);
  if (!st.ok()) return Error{st.error()};
  auto impl = std::make_unique<Impl>();
  impl->opt = std::move(options);
  impl->endpoint = *IngestEndpoint(impl->opt.url);
  if (auto t = impl->Token(); !t.ok()) return MakeError("--token-file: " + t.error());
  Impl* p = impl.get();
  auto spool = Spool::Open(p->opt.spool_dir, p->opt.spool_max_bytes, [p](const std::string& s) { p->Log(s); });
  if (!spool.ok()) return spool.take_error();
  p->spool = std::move(*spool);
  p->Refresh();
  p->Log("push: to " + p->endpoint + ", spool " + p->spool->dir() + " (" + std::to_string(p->spool->windows()) +
         " windows waiting from an earlier run, bound " + std::to_string(p->opt.spool_max_bytes) + " bytes)");
  p->thread = std::thread([p] { p->Run(); });
  return std::unique_ptr<Pusher>(new Pusher(std::move(impl)));
}

Pusher::Pusher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Pusher::~Pusher() { Stop(); }

Status Pusher::Enqueue(const WindowToPush& w) {
  SpoolItem item;
  std::string app = impl_->opt.app_name.empty() ? AppNameOfExe(w.exe) : impl_->opt.app_name;
  item.name = IngestName(app, w.labels);
  item.from = w.start_unix_ns / 1000000000;
  item.until = (w.start_unix_ns + w.duration_ns + 999999999) / 1000000000;  // rounded up
  if (item.until <= item.from) item.until = item.from + 1;
  item.pid = w.pid;
  item.exe = w.exe;
  std::vector<SpoolItem> dropped;
  std::lock_guard<std::mutex> l(impl_->mu);
  auto added = impl_->spool->Add(w.profile_path, item, impl_->in_flight, &dropped);
  for (const auto& d : dropped) {
    impl_->stats.dropped++;
    impl_->Log("push: spool full (bound " + std::to_string(impl_->opt.spool_max_bytes) + " bytes): dropped window " +
               std::to_string(d.seq) + " (" + d.name + ", from " + std::to_string(d.from) + ")");
  }
  impl_->Refresh();
  impl_->cv.notify_all();
  if (!added.ok()) return Error{added.error()};
  return Status::Ok();
}

PushStats Pusher::Stats() const {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->stats;
}

bool Pusher::WaitEmpty(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> l(impl_->mu);
  return impl_->cv.wait_for(l, timeout, [&] { return impl_->spool->windows() == 0 && impl_->in_flight == 0; });
}

// How long Stop lets the attempt in flight wait for its answer. The agent enqueues its last
// window just before it stops, so that attempt is usually running: cancelled after the backend
// stored the profile, the window would stay spooled and go out again at the next start.
constexpr auto kStopGrace = std::chrono::seconds(5);

void Pusher::Stop() {
  {
    std::unique_lock<std::mutex> l(impl_->mu);
    if (impl_->stop && !impl_->thread.joinable()) return;
    impl_->stop = true;
    impl_->cv.notify_all();
    impl_->cv.wait_for(l, kStopGrace, [&] { return impl_->in_flight == 0; });
    impl_->cancel = true;  // a backend that has not answered by now is cut off
  }
  impl_->cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->Log("push: stopped; " + std::to_string(impl_->spool->windows()) + " windows stay in " + impl_->spool->dir());
}

}  // namespace sb::serve
