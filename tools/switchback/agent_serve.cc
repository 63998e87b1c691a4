#include "tools/switchback/agent_serve.h"

#include <atomic>
#include <cstdio>

#include "agent/retention.h"
#include "serve/http_server.h"
#include "serve/listen_address.h"
#include "serve/pusher.h"

namespace sb::cli {
namespace {

serve::ProcessInfo ToServe(const agent::FollowedProcess& p) {
  serve::ProcessInfo s;
  s.pid = p.pid;
  s.exe = p.exe;
  s.go_version = p.go_version;
  s.facts_source = p.facts_source;
  s.samples = p.samples;
  s.whole_samples = p.whole_samples;
  s.latest_window_file = p.latest_window_file;
  s.labels = p.labels;
  s.exited = p.exited;
  return s;
}

// The agent as serve/ sees it. The agent is attached once it is open; until then there is
// nothing to list and nothing to capture.
class AgentSource : public serve::ProfileSource {
 public:
  void Attach(agent::Agent* a) { agent_.store(a); }
  std::vector<serve::ProcessInfo> Processes() const override {
    std::vector<serve::ProcessInfo> out;
    if (agent::Agent* a = agent_.load()) {
      for (const auto& p : a->Processes()) out.push_back(ToServe(p));
    }
    return out;
  }
  serve::SourceCounters Counters() const override {
    serve::SourceCounters s;
    agent::Agent* a = agent_.load();
    if (a == nullptr) return s;
    agent::AgentCounters c = a->Counters();
    s.samples_by_stop_reason = c.samples_by_stop_reason;
    s.lost_samples = c.lost_samples;
    s.process_events_lost = c.process_events_lost;
    s.crossings_taken = c.crossings_taken;
    s.processes_followed = c.processes_followed;
    s.windows_written = c.windows_written;
    s.window_write_failures = c.window_write_failures;
    s.retention_deletions = c.retention_deletions;
    s.bpf_run_ns = c.bpf_run_ns;
    s.bpf_run_count = c.bpf_run_count;
    s.binary_cache_bytes = c.binary_cache_bytes;
    s.pcsp_table_cells = c.pcsp_table_cells;
    s.pcsp_table_capacity = c.pcsp_table_capacity;
    return s;
  }
  Result<profile::ProfileData> Capture(const serve::CaptureFilter& f, std::chrono::milliseconds d,
                                       const std::atomic<bool>* cancel) override {
    agent::Agent* a = agent_.load();
    if (a == nullptr) return MakeError("the sampler is not running yet");
    agent::CaptureFilter af;
    af.pid = f.pid;
    af.exe_regex = f.exe_regex;
    return a->Capture(af, d, cancel);
  }

 private:
  std::atomic<agent::Agent*> agent_{nullptr};
};

void Log(const std::string& line) { fprintf(stderr, "switchback agent: %s\n", line.c_str()); }

}  // namespace

struct AgentServing::Impl {
  AgentSource source;
  std::unique_ptr<serve::Pusher> pusher;
  std::unique_ptr<serve::Server> server;
};

void AddServeFlags(CLI::App* cmd, ServeFlags* f) {
  cmd->add_option("--listen", f->listen,
                  "serve /debug/pprof/profile?pid=PID&seconds=N (go tool pprof), /debug/pprof/\n"
                  "and /metrics (Prometheus) on ADDR: a bare port binds 127.0.0.1 only; write\n"
                  "0.0.0.0:PORT or [::]:PORT to expose profiles to the network (off by default)");
  cmd->add_option("--push", f->push,
                  "send every window to this Pyroscope server (POST URL/ingest, format=pprof);\n"
                  "unsent windows wait in DIR/spool, retried with backoff");
  cmd->add_option("--app-name", f->app_name, "Pyroscope application name (default: each executable's name)");
  cmd->add_option("--tenant", f->tenant, "Pyroscope tenant (X-Scope-OrgID header)");
  cmd->add_option("--token-file", f->token_file, "file holding a bearer token for --push (read for every attempt)");
  cmd->add_option("--spool-max", f->spool_max,
                  "bound of DIR/spool (default 256MiB); beyond it the oldest windows are dropped");
}

Result<std::unique_ptr<AgentServing>> AgentServing::Start(const ServeFlags& f, const std::string& dir) {
  auto impl = std::make_unique<Impl>();
  bool push_flags = !f.app_name.empty() || !f.tenant.empty() || !f.token_file.empty();
  if (f.push.empty() && push_flags) return MakeError("--app-name, --tenant and --token-file need --push");
  if (!f.push.empty()) {
    serve::PushOptions o;
    o.url = f.push;
    o.app_name = f.app_name;
    o.tenant = f.tenant;
    o.token_file = f.token_file;
    o.spool_dir = dir + "/spool";
    auto max = agent::ParseSize(f.spool_max);
    if (!max.ok()) return MakeError("--spool-max: " + max.error());
    o.spool_max_bytes = *max;
    o.log = Log;
    if (Status st = serve::CheckPushOptions(o); !st.ok()) return Error{st.error()};
    auto p = serve::Pusher::Start(o);
    if (!p.ok()) return p.take_error();
    impl->pusher = std::move(*p);
  }
  if (!f.listen.empty()) {
    auto addr = serve::ParseListenAddress(f.listen);
    if (!addr.ok()) return addr.take_error();
    serve::ServerOptions o;
    o.listen = *addr;
    o.log = Log;
    if (impl->pusher) {
      serve::Pusher* p = impl->pusher.get();
      o.push_stats = [p] { return p->Stats(); };
    }
    auto s = serve::Server::Start(&impl->source, o);
    if (!s.ok()) return s.take_error();
    impl->server = std::move(*s);
  }
  return std::unique_ptr<AgentServing>(new AgentServing(std::move(impl)));
}

AgentServing::AgentServing(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AgentServing::~AgentServing() { Stop(); }

std::function<void(const agent::WindowFile&)> AgentServing::WindowHook() {
  serve::Pusher* p = impl_->pusher.get();
  if (p == nullptr) return nullptr;
  return [p](const agent::WindowFile& w) {
    serve::WindowToPush win;
    win.profile_path = w.path;
    win.pid = w.pid;
    win.exe = w.exe;
    win.labels = w.labels;
    win.start_unix_ns = w.start_unix_ns;
    win.duration_ns = w.duration_ns;
    if (Status st = p->Enqueue(win); !st.ok()) Log("push: " + st.error());
  };
}

void AgentServing::Attach(agent::Agent* a) { impl_->source.Attach(a); }

void AgentServing::Stop() {
  if (impl_->server) impl_->server->Stop();
  impl_->source.Attach(nullptr);
  if (impl_->pusher) impl_->pusher->Stop();
}

}  // namespace sb::cli
