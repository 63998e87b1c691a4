// Helpers shared by the test suites: running a shell command and capturing its output,
// quoting for the shell, and private temporary directories.
#pragma once

#include <string>

namespace sb::test {

struct CommandResult {
  int status = -1;  // exit status, -1 if it did not exit normally
  std::string out;  // stdout (and stderr when merged)
};

CommandResult RunCommand(const std::string& cmd, bool merge_stderr = true);
// Single-quotes s for /bin/sh.
std::string Quote(const std::string& s);
// A new directory BASE/TAG.XXXXXX (BASE created if needed), or under /tmp if BASE fails.
std::string MakeTempDir(const std::string& base, const std::string& tag);

}  // namespace sb::test
