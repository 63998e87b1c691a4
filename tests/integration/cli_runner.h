// What the integration tests share: running the real CLI and the Go workloads as child
// processes (output in files, killed if a test fails), waiting until the sampler is attached,
// a per-test output directory, and reading the pprof files the CLI writes.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "profile/profile_data.h"

namespace sb::itest {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

struct RunResult {
  int status = -1;  // waitpid status
  bool timed_out = false;
  std::string out, err;
  double seconds = 0;
  bool exited_ok() const;
  int exit_code() const;  // -1 unless it exited
};

// "exit N after S s; stderr: ..." for assertion messages.
std::string Describe(const RunResult& r);

// A child process with stdout and stderr in files. Killed (SIGKILL) if still running when the
// object dies, so a failing assertion never leaves workloads behind, and when the test program
// dies (a crash, or ctest's timeout), so workloads run with -duration=0 never outlive it.
class Child {
 public:
  Child(std::vector<std::string> argv, fs::path out, fs::path err);
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  pid_t pid() const { return pid_; }
  bool running();
  void Signal(int sig);
  // Waits up to TIMEOUT; on timeout kills the child and reports timed_out.
  RunResult Wait(milliseconds timeout);

 private:
  std::vector<std::string> argv_;
  fs::path out_, err_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = -1;
  Clock::time_point start_, end_;
};

// Runs ARGV to completion with output in DIR/NAME.stdout and DIR/NAME.stderr.
RunResult RunCommand(const std::vector<std::string>& argv, const fs::path& dir, const std::string& name,
                     milliseconds timeout);
// True once process PID has at least one perf_event fd open (the sampler is attached).
bool WaitAttached(pid_t pid, milliseconds timeout);
// True once process PID runs EXE (fork returns before the exec: a pid handed to the CLI or
// a binary replaced on disk before then would be the test's own program).
bool WaitExec(pid_t pid, const fs::path& exe, milliseconds timeout);
// True once process PID has a handler for signal SIG (SigCgt in /proc/PID/status), so a test
// can signal it early without racing its start-up.
bool WaitCatches(pid_t pid, int sig, milliseconds timeout);
// Root and a BTF kernel; otherwise false with the reason in *why.
bool BpfAvailable(std::string* why);
// ROOT/<suite>.<test>, emptied, for the current test's artifacts.
fs::path TestDir(const fs::path& root);
// Reads a gzipped pprof file; nullopt with *error set when it is missing or malformed.
std::optional<profile::ProfileData> LoadPprof(const fs::path& path, std::string* error);

}  // namespace sb::itest
