#include "tests/common/shell_util.h"

#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>

namespace sb::test {

CommandResult RunCommand(const std::string& cmd, bool merge_stderr) {
  CommandResult r;
  std::string full = cmd + (merge_stderr ? " 2>&1" : "");
  FILE* p = popen(full.c_str(), "r");
  if (p == nullptr) return r;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

std::string MakeTempDir(const std::string& base, const std::string& tag) {
  std::error_code ec;
  std::filesystem::create_directories(base, ec);
  std::string tmpl = base + "/" + tag + ".XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    tmpl = "/tmp/sb-" + tag + ".XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) return "/tmp";
  }
  return tmpl;
}

}  // namespace sb::test
