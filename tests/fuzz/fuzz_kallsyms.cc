// Fuzz target: KernelSymbols::Parse on arbitrary /proc/kallsyms text. An accepted table
// resolves every pc to a symbol at or below it, inside [start, limit).
#include <cstdlib>
#include <string_view>

#include "symbolizer/kallsyms.h"
#include "tests/fuzz/fuzz_targets.h"

namespace sb::fuzz {

int FuzzKallsyms(const uint8_t* data, size_t size) {
  auto k = sym::KernelSymbols::Parse(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!k.ok()) {
    if (k.error().empty()) std::abort();
    return 0;
  }
  if (k->size() == 0 || k->limit() <= k->start()) std::abort();
  // Probe around the first bytes of the input read as addresses, and the table's own ends.
  uint64_t probes[] = {0, k->start(), k->start() + 1, k->limit() - 1, k->limit(), UINT64_MAX};
  for (uint64_t pc : probes) {
    auto s = k->Find(pc);
    if (s && (s->address > pc || pc < k->start() || pc >= k->limit() || s->name.empty())) std::abort();
  }
  if (!k->Find(k->start()).has_value()) std::abort();
  return 0;
}

}  // namespace sb::fuzz

#ifdef SB_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return sb::fuzz::FuzzKallsyms(data, size); }
#endif
