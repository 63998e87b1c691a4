#include "tests/integration/cli_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "base/file_util.h"
#include "profile/pprof_reader.h"

namespace sb::itest {

bool RunResult::exited_ok() const { return !timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0; }

int RunResult::exit_code() const { return !timed_out && WIFEXITED(status) ? WEXITSTATUS(status) : -1; }

std::string Describe(const RunResult& r) {
  std::ostringstream s;
  if (r.timed_out) {
    s << "timed out";
  } else if (WIFEXITED(r.status)) {
    s << "exit " << WEXITSTATUS(r.status);
  } else if (WIFSIGNALED(r.status)) {
    s << "killed by signal " << WTERMSIG(r.status);
  }
  s << " after " << r.seconds << " s";
  std::string err = r.err.size() > 4000 ? "..." + r.err.substr(r.err.size() - 4000) : r.err;
  if (!err.empty()) s << "; stderr:\n" << err;
  return s.str();
}

Child::Child(std::vector<std::string> argv, fs::path out, fs::path err)
    : argv_(std::move(argv)), out_(std::move(out)), err_(std::move(err)) {
  // Everything the child needs is prepared before fork: it only calls async-signal-safe
  // functions before exec.
  std::vector<char*> args;
  for (auto& a : argv_) args.push_back(a.data());
  args.push_back(nullptr);
  start_ = Clock::now();
  pid_ = fork();
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int o = open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o >= 0) dup2(o, 1);
    if (e >= 0) dup2(e, 2);
    execv(args[0], args.data());
    fprintf(stderr, "exec %s: %s\n", args[0], strerror(errno));
    _exit(127);
  }
}

Child::~Child() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    int st;
    waitpid(pid_, &st, 0);
  }
}

bool Child::running() {
  if (reaped_) return false;
  int st;
  pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    status_ = st;
    end_ = Clock::now();
    return false;
  }
  return true;
}

void Child::Signal(int sig) {
  if (!reaped_) kill(pid_, sig);
}

RunResult Child::Wait(milliseconds timeout) {
  RunResult r;
  auto deadline = Clock::now() + timeout;
  while (running()) {
    if (Clock::now() > deadline) {
      r.timed_out = true;
      kill(pid_, SIGKILL);
      int st;
      waitpid(pid_, &st, 0);
      reaped_ = true;
      status_ = st;
      end_ = Clock::now();
      break;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  r.status = status_;
  r.seconds = std::chrono::duration<double>(end_ - start_).count();
  auto out = sb::ReadFile(out_.string());
  auto err = sb::ReadFile(err_.string());
  if (out.ok()) r.out = *out;
  if (err.ok()) r.err = *err;
  return r;
}

RunResult RunCommand(const std::vector<std::string>& argv, const fs::path& dir, const std::string& name,
                     milliseconds timeout) {
  Child c(argv, dir / (name + ".stdout"), dir / (name + ".stderr"));
  return c.Wait(timeout);
}

bool WaitAttached(pid_t pid, milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
      std::error_code ec2;
      auto target = fs::read_symlink(e.path(), ec2);
      if (!ec2 && target.string().find("perf_event") != std::string::npos) return true;
    }
    if (ec) return false;  // the process is gone
    std::this_thread::sleep_for(milliseconds(50));
  }
  return false;
}

bool WaitExec(pid_t pid, const fs::path& exe, milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    std::error_code ec;
    if (fs::equivalent("/proc/" + std::to_string(pid) + "/exe", exe, ec)) return true;
    if (!fs::exists("/proc/" + std::to_string(pid), ec)) return false;  // the process is gone
    std::this_thread::sleep_for(milliseconds(5));
  }
  return false;
}

bool WaitCatches(pid_t pid, int sig, milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    auto status = sb::ReadFile("/proc/" + std::to_string(pid) + "/status");
    if (!status.ok()) return false;
    size_t at = status->find("SigCgt:");
    if (at != std::string::npos) {
      unsigned long long mask = strtoull(status->c_str() + at + 7, nullptr, 16);
      if ((mask >> (sig - 1)) & 1) return true;
    }
    std::this_thread::sleep_for(milliseconds(2));
  }
  return false;
}

bool BpfAvailable(std::string* why) {
  if (geteuid() != 0) {
    *why = "not root";
    return false;
  }
  if (!fs::exists("/sys/kernel/btf/vmlinux")) {
    *why = "no /sys/kernel/btf/vmlinux";
    return false;
  }
  return true;
}

fs::path TestDir(const fs::path& root) {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = root / (std::string(info->test_suite_name()) + "." + info->name());
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir);
  return dir;
}

std::optional<profile::ProfileData> LoadPprof(const fs::path& path, std::string* error) {
  auto bytes = sb::ReadFile(path.string());
  if (!bytes.ok()) {
    *error = bytes.error();
    return std::nullopt;
  }
  auto p = sb::profile::ReadPprofGz(*bytes);
  if (!p.ok()) {
    *error = path.string() + ": " + p.error();
    return std::nullopt;
  }
  return std::move(*p);
}

}  // namespace sb::itest
