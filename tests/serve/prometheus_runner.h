// Runs a real Prometheus server (Debian's package) for a test: its own config and data
// directory under DIR, a free loopback port, a 1 s scrape of TARGET_PORT's /metrics; asks its
// query API for QUERY until WANT distinct values were seen (or TIMEOUT_S), then stops it.
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "base/file_util.h"
#include "tests/common/shell_util.h"

namespace sb::serve::testing {

inline int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

struct PrometheusRun {
  std::vector<double> values;  // distinct values in the order seen
  std::string last_answer;
  std::string log;             // prometheus' own output, for failure messages
};

// QUERY_URLENCODED: e.g. switchback_samples_total%7Breason%3D%22root%22%7D
inline PrometheusRun ScrapeWithPrometheus(int target_port, const std::string& dir, const std::string& query_urlencoded,
                                          size_t want, int timeout_s) {
  PrometheusRun run;
  int port = FreeLoopbackPort();
  std::string cfg = dir + "/prometheus.yml";
  (void)WriteFileAtomic(cfg, "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                             "scrape_configs:\n  - job_name: switchback\n    static_configs:\n"
                             "      - targets: ['127.0.0.1:" + std::to_string(target_port) + "']\n");
  std::string pidfile = dir + "/prometheus.pid";
  test::RunCommand("prometheus --config.file=" + test::Quote(cfg) + " --storage.tsdb.path=" + test::Quote(dir + "/prometheus-data") +
                   " --web.listen-address=127.0.0.1:" + std::to_string(port) + " > " + test::Quote(dir + "/prometheus.log") +
                   " 2>&1 & echo $! > " + test::Quote(pidfile));
  auto pid_text = ReadFile(pidfile);
  pid_t prom = pid_text.ok() ? std::atoi(pid_text->c_str()) : 0;
  if (prom <= 0) return run;
  for (int i = 0; i < timeout_s && run.values.size() < want; i++) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    auto q = test::RunCommand("curl -sS 'http://127.0.0.1:" + std::to_string(port) + "/api/v1/query?query=" +
                                  query_urlencoded + "'", false);
    run.last_answer = q.out;
    auto j = nlohmann::json::parse(q.out, nullptr, false);
    if (j.is_discarded() || j["status"] != "success" || j["data"]["result"].empty()) continue;
    double v = std::stod(j["data"]["result"][0]["value"][1].get<std::string>());
    if (run.values.empty() || v != run.values.back()) run.values.push_back(v);
  }
  kill(prom, SIGTERM);
  for (int i = 0; i < 100 && kill(prom, 0) == 0; i++) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (kill(prom, 0) == 0) kill(prom, SIGKILL);
  auto log = ReadFile(dir + "/prometheus.log");
  run.log = log.ok() ? *log : "";
  return run;
}

}  // namespace sb::serve::testing
