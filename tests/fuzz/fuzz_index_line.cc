// Fuzz target: ParseIndexLine on an arbitrary line of DIR/index.jsonl. An accepted entry
// written back and parsed again is the same entry.
#include <cstdlib>
#include <string_view>

#include "agent/window_index.h"
#include "tests/fuzz/fuzz_targets.h"

namespace sb::fuzz {

int FuzzIndexLine(const uint8_t* data, size_t size) {
  auto e = agent::ParseIndexLine(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!e.ok()) return 0;
  auto again = agent::ParseIndexLine(agent::IndexLine(*e));
  if (!again.ok() || again->pid != e->pid || again->start_unix_ns != e->start_unix_ns || again->samples != e->samples)
    std::abort();
  return 0;
}

}  // namespace sb::fuzz

#ifdef SB_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return sb::fuzz::FuzzIndexLine(data, size); }
#endif
