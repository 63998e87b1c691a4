// A stand-in for a Pyroscope server in the push tests: implements the documented POST /ingest
// (query name/from/until/format=pprof, gzip pprof body) on loopback, checks every request
// against it, records what arrived, and can answer 500, 400, hang, or accept after a second.
#pragma once

#include <httplib.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "profile/pprof_reader.h"

namespace sb::serve::testing {

struct Received {
  std::string name;
  int64_t from = 0;
  int64_t until = 0;
  std::string tenant;
  std::string authorization;
  std::string content_type;
  std::string body;
  std::string problem;  // what did not follow the documented API; empty when all did
};

class IngestReceiver {
 public:
  enum Mode { kOk, kFail500, kRefuse400, kHang, kSlowOk };
  IngestReceiver() {
    http_.Post("/ingest", [this](const httplib::Request& req, httplib::Response& res) { Handle(req, res); });
    port_ = http_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { http_.listen_after_bind(); });
    while (!http_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // else stop() is lost
  }
  ~IngestReceiver() {
    mode_ = kOk;
    http_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void set_mode(Mode m) { mode_ = m; }
  int attempts() const { return attempts_.load(); }
  std::vector<Received> accepted() const {
    std::lock_guard<std::mutex> l(mu_);
    return accepted_;
  }

 private:
  void Handle(const httplib::Request& req, httplib::Response& res) {
    attempts_++;
    Mode m = mode_.load();
    if (m == kHang) {
      for (int i = 0; i < 500 && mode_.load() == kHang; i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      res.status = 503;
      return;
    }
    if (m == kSlowOk) std::this_thread::sleep_for(std::chrono::seconds(1));  // then accepted as kOk
    if (m == kFail500) {
      res.status = 500;
      res.set_content("backend down for the test", "text/plain");
      return;
    }
    Received r;
    r.name = req.get_param_value("name");
    r.tenant = req.get_header_value("X-Scope-OrgID");
    r.authorization = req.get_header_value("Authorization");
    r.content_type = req.get_header_value("Content-Type");
    r.body = req.body;
    try {
      r.from = std::stoll(req.get_param_value("from"));
      r.until = std::stoll(req.get_param_value("until"));
    } catch (const std::exception&) {
      r.problem += "from/until not numbers; ";
    }
    if (r.name.empty() || r.name.find('{') == std::string::npos || r.name.back() != '}') r.problem += "bad name; ";
    if (req.get_param_value("format") != "pprof") r.problem += "format is not pprof; ";
    if (r.until <= r.from) r.problem += "until <= from; ";
    if (r.body.size() < 2 || r.body[0] != '\x1f' || r.body[1] != '\x8b') r.problem += "body is not gzip; ";
    else if (auto p = profile::ReadPprofGz(r.body); !p.ok()) r.problem += "body is not a pprof: " + p.error();
    if (m == kRefuse400) {
      res.status = 400;
      res.set_content("invalid profile", "text/plain");
      return;
    }
    std::lock_guard<std::mutex> l(mu_);
    accepted_.push_back(r);
    res.status = 200;
  }

  httplib::Server http_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<Mode> mode_{kOk};
  std::atomic<int> attempts_{0};
  mutable std::mutex mu_;
  std::vector<Received> accepted_;
};

}  // namespace sb::serve::testing
