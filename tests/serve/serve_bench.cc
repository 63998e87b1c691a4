// Figures for docs/performance.md (run by tools/bench/serve_figures.sh, not by ctest):
//   serve_bench latency ROUNDS      time of /debug/pprof/profile?seconds=1 beyond the second
//                                   (median), and the server's CPU while serving 1 request/s
//                                   against the same time idle (curl is the client, in its own
//                                   process, so its CPU is not counted)
//   serve_bench outage WINDOW.pb.gz PROCESSES WINDOW_SECONDS OUTAGE_SECONDS
//                                   a backend outage: PROCESSES windows every WINDOW_SECONDS
//                                   for OUTAGE_SECONDS while the receiver answers 500 (time
//                                   compressed: the windows are spooled as fast as they come),
//                                   then the receiver comes back; prints the spool's size and
//                                   checks every window arrived exactly once, in order.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <thread>

#include "base/file_util.h"
#include "serve/http_server.h"
#include "serve/pusher.h"
#include "tests/common/shell_util.h"
#include "tests/serve/fake_source.h"
#include "tests/serve/ingest_receiver.h"

namespace sb::serve {
namespace {

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int Latency(int rounds) {
  testing::FakeSource source;
  ServerOptions o;
  o.listen = *ParseListenAddress("0");
  o.log = [](const std::string&) {};
  auto s = Server::Start(&source, o);
  if (!s.ok()) return fprintf(stderr, "%s\n", s.error().c_str()), 1;
  std::string url = "http://127.0.0.1:" + std::to_string((*s)->port()) + "/debug/pprof/profile?pid=4242&seconds=1";
  std::vector<double> beyond;
  double busy_cpu = 0, busy_wall = 0;
  for (int i = 0; i < rounds; i++) {
    double c0 = CpuSeconds(), t0 = Now();
    auto r = test::RunCommand("curl -sS -o /dev/null -w '%{http_code}' " + test::Quote(url), false);
    double t1 = Now();
    busy_cpu += CpuSeconds() - c0;
    busy_wall += t1 - t0;
    if (r.out != "200") return fprintf(stderr, "answer %s\n", r.out.c_str()), 1;
    beyond.push_back((t1 - t0 - 1.0) * 1000);
  }
  double c0 = CpuSeconds(), t0 = Now();
  std::this_thread::sleep_for(std::chrono::duration<double>(busy_wall));
  double idle_cpu = CpuSeconds() - c0, idle_wall = Now() - t0;
  printf("profile?seconds=1 beyond the second: median %.1f ms (min %.1f, max %.1f, %d rounds; includes curl's start)\n",
         Median(beyond), *std::min_element(beyond.begin(), beyond.end()),
         *std::max_element(beyond.begin(), beyond.end()), rounds);
  printf("server CPU while serving back-to-back 1 s profiles: %.3f%% of one core (idle: %.3f%%)\n",
         100 * busy_cpu / busy_wall, 100 * idle_cpu / idle_wall);
  return 0;
}

int Outage(const std::string& window, int processes, int window_seconds, int outage_seconds) {
  std::string dir = test::MakeTempDir("/tmp", "sb-outage");
  testing::IngestReceiver receiver;
  receiver.set_mode(testing::IngestReceiver::kFail500);
  PushOptions o;
  o.url = receiver.url();
  o.spool_dir = dir + "/spool";
  o.max_backoff_seconds = 5;  // the real default is 300 s; the replay keeps the wait short
  uint64_t log_lines = 0;
  o.log = [&](const std::string&) { log_lines++; };
  auto p = Pusher::Start(o);
  if (!p.ok()) return fprintf(stderr, "%s\n", p.error().c_str()), 1;
  int64_t t0 = 1700000000;
  int windows = outage_seconds / window_seconds;
  for (int w = 0; w < windows; w++) {
    for (int i = 0; i < processes; i++) {
      WindowToPush win;
      // Each window its own file, as the agent writes them (the spool hard-links it).
      win.profile_path = dir + "/w" + std::to_string(w * processes + i) + ".pb.gz";
      std::filesystem::copy_file(window, win.profile_path, std::filesystem::copy_options::none);
      win.pid = 1000 + i;
      win.exe = "/srv/app" + std::to_string(i);
      win.labels = {{"pid", std::to_string(win.pid)}};
      win.start_unix_ns = (t0 + int64_t(w) * window_seconds) * 1000000000ll;
      win.duration_ns = window_seconds * 1000000000ll;
      if (Status st = (*p)->Enqueue(win); !st.ok()) return fprintf(stderr, "%s\n", st.error().c_str()), 1;
    }
  }
  PushStats during = (*p)->Stats();
  auto du = test::RunCommand("du -sk " + test::Quote(o.spool_dir) + " | cut -f1", false);
  double back = Now();
  receiver.set_mode(testing::IngestReceiver::kOk);
  if (!(*p)->WaitEmpty(std::chrono::minutes(30))) return fprintf(stderr, "spool did not drain\n"), 1;
  double drained = Now() - back;
  auto got = receiver.accepted();
  std::map<std::string, int64_t> last_from;
  std::set<std::pair<std::string, int64_t>> seen;
  int dup = 0, out_of_order = 0;
  for (const auto& r : got) {
    if (!seen.insert({r.name, r.from}).second) dup++;
    if (last_from.count(r.name) && r.from <= last_from[r.name]) out_of_order++;
    last_from[r.name] = r.from;
  }
  printf("outage %d s, %d processes, %d s windows: %d windows spooled, %llu bytes (%s KiB on disk, %llu failed "
         "attempts, %llu dropped)\n",
         outage_seconds, processes, window_seconds, windows * processes,
         static_cast<unsigned long long>(during.backlog_bytes), du.out.substr(0, du.out.find('\n')).c_str(),
         static_cast<unsigned long long>(during.failures), static_cast<unsigned long long>(during.dropped));
  printf("after the backend came back: %zu windows delivered in %.1f s, %d duplicates, %d out of order, %llu log lines\n",
         got.size(), drained, dup, out_of_order, static_cast<unsigned long long>(log_lines));
  (*p)->Stop();
  std::filesystem::remove_all(dir);
  return (got.size() == size_t(windows * processes) && dup == 0 && out_of_order == 0) ? 0 : 1;
}

}  // namespace
}  // namespace sb::serve

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "latency") return sb::serve::Latency(argc > 2 ? std::atoi(argv[2]) : 10);
  if (mode == "outage" && argc == 6) {
    return sb::serve::Outage(argv[2], std::atoi(argv[3]), std::atoi(argv[4]), std::atoi(argv[5]));
  }
  fprintf(stderr, "usage: serve_bench latency [ROUNDS] | outage WINDOW.pb.gz PROCESSES WINDOW_SECONDS OUTAGE_SECONDS\n");
  return 2;
}
