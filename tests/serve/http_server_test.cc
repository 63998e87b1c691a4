// The server with real clients: curl for the index, the errors and the limits; `go tool
// pprof` fetching a profile over HTTP; promtool on the live /metrics; a real Prometheus
// scraping it every second.
#include "serve/http_server.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/build_info.h"
#include "base/file_util.h"
#include "base/kernel_features.h"
#include "tests/common/shell_util.h"
#include "tests/serve/fake_source.h"
#include "tests/serve/prometheus_runner.h"

namespace sb::serve {
namespace {

using test::Quote;
using test::RunCommand;

struct Answer {
  int status = 0;
  std::string headers;  // lower-cased
  std::string body;
};

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::MakeTempDir("/tmp", "sb-serve");
    std::filesystem::create_directories(dir_ + "/home");
    Start(4);
  }
  void TearDown() override {
    if (server_) server_->Stop();
    std::filesystem::remove_all(dir_);
  }
  void Start(int max_concurrent) {
    if (server_) server_->Stop();
    ServerOptions o;
    o.listen = *ParseListenAddress("0");
    o.max_concurrent_profiles = max_concurrent;
    o.log = [this](const std::string& s) {
      std::lock_guard<std::mutex> l(log_mu_);
      logs_.push_back(s);
    };
    auto s = Server::Start(&source_, o);
    ASSERT_TRUE(s.ok()) << s.error();
    server_ = std::move(*s);
  }
  std::string Url(const std::string& path) { return "http://127.0.0.1:" + std::to_string(server_->port()) + path; }
  Answer Curl(const std::string& path, const std::string& extra = "") {
    static std::atomic<int> n{0};
    std::string tag = dir_ + "/c" + std::to_string(n++);
    auto r = RunCommand("curl -sS --max-time 60 " + extra + " -D " + Quote(tag + ".h") + " -o " + Quote(tag + ".b") +
                        " -w '%{http_code}' " + Quote(Url(path)), false);
    Answer a;
    a.status = std::atoi(r.out.c_str());
    a.headers = ReadFile(tag + ".h").ok() ? *ReadFile(tag + ".h") : "";
    for (char& c : a.headers) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    a.body = ReadFile(tag + ".b").ok() ? *ReadFile(tag + ".b") : "";
    return a;
  }
  test::CommandResult Pprof(const std::string& args) {
    std::string home = dir_ + "/home";
    return RunCommand("env HOME=" + Quote(home) + " PPROF_TMPDIR=" + Quote(home) + " timeout 120 go tool pprof " + args);
  }
  void ExpectGoError(const Answer& a, int status, const std::string& line) {
    EXPECT_EQ(a.status, status) << a.body;
    EXPECT_EQ(a.body, line + "\n");
    EXPECT_NE(a.headers.find("content-type: text/plain; charset=utf-8"), std::string::npos) << a.headers;
    EXPECT_NE(a.headers.find("x-go-pprof: 1"), std::string::npos) << a.headers;
    EXPECT_EQ(a.headers.find("content-disposition"), std::string::npos);
  }

  testing::FakeSource source_;
  std::unique_ptr<Server> server_;
  std::string dir_;
  std::mutex log_mu_;
  std::vector<std::string> logs_;
};

TEST_F(HttpServerTest, GoToolPprofFetchesAProfile) {
  if (RunCommand("command -v go").status != 0) GTEST_SKIP() << "go is not on PATH";
  auto r = Pprof("-top " + Quote(Url("/debug/pprof/profile?pid=4242&seconds=1")));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Fetching profile over HTTP"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("main.spin"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("main.main"), std::string::npos) << r.out;
  ASSERT_EQ(source_.filters().size(), 1u);
  EXPECT_EQ(source_.filters()[0].pid, 4242u);
  // pprof shows our one-line error text.
  auto e = Pprof("-top " + Quote(Url("/debug/pprof/profile?pid=999&seconds=1")));
  EXPECT_NE(e.status, 0);
  EXPECT_NE(e.out.find("no followed process with pid 999"), std::string::npos) << e.out;
}

TEST_F(HttpServerTest, ProfileHeadersAreGos) {
  auto t0 = std::chrono::steady_clock::now();
  Answer a = Curl("/debug/pprof/profile?pid=4242&seconds=1");
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(a.status, 200);
  EXPECT_GE(secs, 1.0);
  EXPECT_NE(a.headers.find("content-type: application/octet-stream"), std::string::npos) << a.headers;
  EXPECT_NE(a.headers.find("content-disposition: attachment; filename=\"profile\""), std::string::npos) << a.headers;
  EXPECT_NE(a.headers.find("x-content-type-options: nosniff"), std::string::npos);
  auto p = profile::ReadPprofGz(a.body);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_FALSE(p->samples.empty());
  ASSERT_EQ(a.body.substr(0, 2), "\x1f\x8b");
  bool found = false;
  for (const auto& l : logs_) found |= l.find("GET /debug/pprof/profile?pid=4242&seconds=1 from 127.0.0.1: 200") != std::string::npos;
  EXPECT_TRUE(found);
}

TEST_F(HttpServerTest, ExeRegexBecomesLiteralPaths) {
  Answer a = Curl("/debug/pprof/profile?exe=demo%24&seconds=1");
  EXPECT_EQ(a.status, 200) << a.body;
  ASSERT_EQ(source_.filters().size(), 1u);
  EXPECT_EQ(source_.filters()[0].pid, 0u);
  EXPECT_EQ(source_.filters()[0].exe_regex, "^(/opt/demo/bin/demo)$");
  Answer all = Curl("/debug/pprof/profile?exe=%5E%2Fopt%2F&seconds=1");  // ^/opt/
  EXPECT_EQ(all.status, 200);
  EXPECT_EQ(source_.filters()[1].exe_regex, "^(/opt/demo/bin/demo|/opt/other/other)$");
  ExpectGoError(Curl("/debug/pprof/profile?exe=nomatch&seconds=1"), 404, "no followed process matches exe=nomatch");
}

TEST_F(HttpServerTest, ErrorsAreOneLineWithStatus) {
  ExpectGoError(Curl("/debug/pprof/profile?pid=4242&seconds=abc"), 400,
                "invalid value for \"seconds\" - must be a positive integer");
  ExpectGoError(Curl("/debug/pprof/profile?pid=4242&seconds=301"), 400, "profile duration exceeds server's WriteTimeout");
  ExpectGoError(Curl("/debug/pprof/profile?pid=x"), 400, "invalid value for \"pid\" - must be a process id from 1 to 4194304");
  ExpectGoError(Curl("/debug/pprof/profile"), 400, "give exactly one of pid=PID or exe=REGEX");
  ExpectGoError(Curl("/debug/pprof/profile?exe=%28"), 400,
                "invalid value for \"exe\" - Unmatched ( or \\(");
  ExpectGoError(Curl("/debug/pprof/profile?pid=999&seconds=1"), 404, "no followed process with pid 999");
  ExpectGoError(Curl("/debug/pprof/profile?pid=4244&seconds=1"), 404, "process 4244 has exited");
  ExpectGoError(Curl("/debug/pprof/heap"), 404, "Unknown profile");
  ExpectGoError(Curl("/debug/pprof/index.html"), 404, "Unknown profile");
  EXPECT_EQ(Curl("/debug/pprof/?format=xml").status, 400);
  // No path reaches the file system.
  for (const char* p : {"/etc/passwd", "/../../../../etc/passwd", "/debug/pprof/../../../../etc/passwd",
                        "/debug/pprof/%2e%2e/%2e%2e/etc/passwd", "/metrics/../../etc/passwd", "//etc/passwd"}) {
    Answer a = Curl(p, "--path-as-is");
    EXPECT_EQ(a.status, 404) << p;
    EXPECT_EQ(a.body.find("root:"), std::string::npos) << p;
  }
  EXPECT_GE(Curl("/debug/pprof/profile?pid=4242", "--data ''").status, 400);  // httplib: 400 or 404
  EXPECT_EQ(Curl("/debug/pprof", "").status, 301);
  EXPECT_TRUE(source_.filters().empty());  // no error reached the sampler
}

TEST_F(HttpServerTest, IndexHtmlAndJson) {
  Answer h = Curl("/debug/pprof/");
  EXPECT_EQ(h.status, 200);
  EXPECT_NE(h.headers.find("content-type: text/html; charset=utf-8"), std::string::npos);
  EXPECT_NE(h.body.find("<td>4242</td><td>/opt/demo/bin/demo</td><td>go1.19.8</td><td>dwarf</td><td>1000</td><td>99.0%</td>"),
            std::string::npos)
      << h.body;
  EXPECT_NE(h.body.find("note=&lt;b&gt;&amp;&#39;&quot;"), std::string::npos);
  Answer j = Curl("/debug/pprof/?format=json");
  EXPECT_EQ(j.status, 200);
  EXPECT_NE(j.headers.find("content-type: application/json"), std::string::npos);
  auto doc = nlohmann::json::parse(j.body);
  ASSERT_EQ(doc["processes"].size(), 3u);
  EXPECT_EQ(doc["processes"][0]["latest_window_file"], "/var/lib/switchback/demo-4242-0001.pb.gz");
  EXPECT_EQ(doc["processes"][2]["exited"], true);
}

TEST_F(HttpServerTest, ConcurrentProfilesBoundedWith429) {
  Start(2);
  auto slow = [this] { return Curl("/debug/pprof/profile?pid=4242&seconds=4"); };
  auto f1 = std::async(std::launch::async, slow);
  auto f2 = std::async(std::launch::async, slow);
  for (int i = 0; i < 500 && source_.captures_running_.load() < 2; i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(source_.captures_running_.load(), 2);
  ExpectGoError(Curl("/debug/pprof/profile?pid=4242&seconds=1"), 429, "too many profile requests at once (at most 2)");
  // The index and /metrics still answer while the slots are full: the answer was made while
  // both captures ran (how fast it came is the machine's).
  Answer m = Curl("/metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_NE(m.body.find("switchback_profile_requests_in_flight 2\n"), std::string::npos) << m.body;
  EXPECT_EQ(f1.get().status, 200);
  EXPECT_EQ(f2.get().status, 200);
  EXPECT_EQ(Curl("/debug/pprof/profile?pid=4242&seconds=1").status, 200);  // slots free again
  auto stats = server_->Stats();
  EXPECT_EQ(stats.profile_requests_by_code[200], 3u);
  EXPECT_EQ(stats.profile_requests_by_code[429], 1u);
}

TEST_F(HttpServerTest, StopEndsRunningCaptures) {
  auto f = std::async(std::launch::async, [this] { return Curl("/debug/pprof/profile?pid=4242&seconds=60"); });
  for (int i = 0; i < 500 && source_.captures_running_.load() < 1; i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto t0 = std::chrono::steady_clock::now();
  server_->Stop();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  f.get();
  EXPECT_EQ(source_.captures_running_.load(), 0);
}

TEST_F(HttpServerTest, MetricsPassPromtool) {
  Answer m = Curl("/metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_NE(m.headers.find("content-type: text/plain; version=0.0.4"), std::string::npos) << m.headers;
  EXPECT_NE(m.body.find("switchback_samples_total{reason=\"bad_fp\"} 7\n"), std::string::npos) << m.body;
  EXPECT_NE(m.body.find("switchback_processes_followed 3\n"), std::string::npos);
  EXPECT_NE(m.body.find("process_resident_memory_bytes "), std::string::npos);
  EXPECT_NE(m.body.find("process_cpu_seconds_total "), std::string::npos);
  // The build and this kernel's features, probed when the server started.
  EXPECT_NE(m.body.find("switchback_build_info{version=\"" + GetBuildInfo().version + "\",revision=\""), std::string::npos)
      << m.body;
  EXPECT_NE(m.body.find(",kernel=\"" + ProbeKernelFeatures().release + "\",btf=\""), std::string::npos) << m.body;
  if (RunCommand("command -v promtool").status != 0) GTEST_SKIP() << "promtool is not installed";
  auto r = RunCommand("curl -sS " + Quote(Url("/metrics")) + " | promtool check metrics");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "");
}

// A real Prometheus server scrapes us every second; its query API sees the counter grow.
TEST_F(HttpServerTest, PrometheusScrapes) {
  if (RunCommand("command -v prometheus").status != 0) GTEST_SKIP() << "prometheus is not installed";
  auto run = testing::ScrapeWithPrometheus(server_->port(), dir_, "switchback_samples_total%7Breason%3D%22root%22%7D", 2, 90);
  ASSERT_EQ(run.values.size(), 2u) << "last answer: " << run.last_answer << "\n" << run.log;
  EXPECT_GT(run.values[1], run.values[0]);
  EXPECT_GE(run.values[0], 1000);
}

}  // namespace
}  // namespace sb::serve
