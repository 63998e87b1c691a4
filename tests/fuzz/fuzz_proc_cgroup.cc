// Fuzz target: ParseProcCgroup on arbitrary /proc/PID/cgroup text. A container id it returns
// is always 64 hex digits, and a unit never contains a slash.
#include <cstdlib>
#include <string_view>

#include "agent/cgroup_info.h"
#include "tests/fuzz/fuzz_targets.h"

namespace sb::fuzz {

int FuzzProcCgroup(const uint8_t* data, size_t size) {
  auto info = agent::ParseProcCgroup(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!info.container_id.empty() && info.container_id.size() != 64) std::abort();
  if (info.unit.find('/') != std::string::npos) std::abort();
  return 0;
}

}  // namespace sb::fuzz

#ifdef SB_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return sb::fuzz::FuzzProcCgroup(data, size); }
#endif
