#include "serve/process_self.h"

#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "base/file_util.h"

namespace sb::serve {

Result<SelfUsage> ParseProcStat(const std::string& stat, long ticks_per_second, long page_size,
                                double boot_time_seconds) {
  // The command name (field 2) is in parentheses and may hold spaces: split after the last ')'.
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return MakeError("/proc/self/stat: no command name");
  std::istringstream in(stat.substr(close + 1));
  std::vector<std::string> f;  // f[0] is field 3 (state)
  std::string tok;
  while (in >> tok) f.push_back(tok);
  if (f.size() < 22) return MakeError("/proc/self/stat: too few fields");
  SelfUsage u;
  try {
    double utime = std::stod(f[11]), stime = std::stod(f[12]);
    u.cpu_seconds = (utime + stime) / static_cast<double>(ticks_per_second);
    u.start_time_seconds = boot_time_seconds + std::stod(f[19]) / static_cast<double>(ticks_per_second);
    u.resident_bytes = std::stoull(f[21]) * static_cast<uint64_t>(page_size);
  } catch (const std::exception&) {
    return MakeError("/proc/self/stat: a field is not a number");
  }
  return u;
}

Result<SelfUsage> ReadSelfUsage() {
  auto stat = ReadFile("/proc/self/stat");
  if (!stat.ok()) return stat.take_error();
  double boot = 0;
  if (auto s = ReadFile("/proc/stat"); s.ok()) {
    size_t p = s->find("\nbtime ");
    if (p != std::string::npos) boot = std::strtod(s->c_str() + p + 7, nullptr);
  }
  return ParseProcStat(*stat, sysconf(_SC_CLK_TCK), sysconf(_SC_PAGESIZE), boot);
}

}  // namespace sb::serve
