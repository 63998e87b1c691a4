// A ProfileSource for the serve tests: fixed processes, counters that grow with time, and a
// Capture that waits out the requested duration (or the cancel flag) and returns a real Go
// CPU profile (runtime/pprof of a small program: main.spin, main.main).
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "base/file_util.h"
#include "profile/pprof_reader.h"
#include "serve/profile_source.h"

namespace sb::serve::testing {

inline std::string GoProfilePath() { return SB_SERVE_GO_PROFILE; }

class FakeSource : public ProfileSource {
 public:
  FakeSource() : start_(std::chrono::steady_clock::now()) {
    ProcessInfo a;
    a.pid = 4242;
    a.exe = "/opt/demo/bin/demo";
    a.go_version = "go1.19.8";
    a.facts_source = "dwarf";
    a.samples = 1000;
    a.whole_samples = 990;
    a.latest_window_file = "/var/lib/switchback/demo-4242-0001.pb.gz";
    a.labels = {{"service", "demo"}, {"note", "<b>&'\""}};
    ProcessInfo b = a;
    b.pid = 4243;
    b.exe = "/opt/other/other";
    b.labels = {};
    ProcessInfo c = a;
    c.pid = 4244;
    c.exited = true;
    procs_ = {a, b, c};
  }
  std::vector<ProcessInfo> Processes() const override { return procs_; }
  SourceCounters Counters() const override {
    SourceCounters c;
    uint64_t ms = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start_).count());
    c.samples_by_stop_reason = {{"root", 1000 + ms}, {"bad_fp", 7}, {"goroutine_exited", 3}};
    c.lost_samples = 2;
    c.crossings_taken = {{"systemstack", 40}, {"mcall", 12}};
    c.processes_followed = 3;
    c.windows_written = 5;
    c.retention_deletions = 1;
    c.bpf_run_ns = 1500000000;
    c.bpf_run_count = 100000;
    return c;
  }
  Result<profile::ProfileData> Capture(const CaptureFilter& f, std::chrono::milliseconds d,
                                       const std::atomic<bool>* cancel) override {
    {
      std::lock_guard<std::mutex> l(mu_);
      filters_.push_back(f);
    }
    captures_running_++;
    auto end = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < end && !cancel->load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    captures_running_--;
    auto bytes = ReadFile(GoProfilePath());
    if (!bytes.ok()) return bytes.take_error();
    return profile::ReadPprofGz(*bytes);
  }
  std::vector<CaptureFilter> filters() const {
    std::lock_guard<std::mutex> l(mu_);
    return filters_;
  }
  std::atomic<int> captures_running_{0};

 private:
  std::chrono::steady_clock::time_point start_;
  std::vector<ProcessInfo> procs_;
  mutable std::mutex mu_;
  std::vector<CaptureFilter> filters_;
};

}  // namespace sb::serve::testing
