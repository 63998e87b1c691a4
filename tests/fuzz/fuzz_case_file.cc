// Fuzz target: coredump case JSON parser and serializer on arbitrary bytes. A parsed case must
// serialize and parse back to the same text.
#include <cstdlib>
#include <string>

#include "coredump/replay/case_file.h"
#include "tests/fuzz/fuzz_targets.h"

namespace sb::fuzz {

int FuzzCaseFile(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto c = coredump::ParseCase(text);
  if (!c.ok()) return 0;
  std::string once = coredump::SerializeCase(*c);
  auto again = coredump::ParseCase(once);
  if (!again.ok() || coredump::SerializeCase(*again) != once) abort();
  return 0;
}

}  // namespace sb::fuzz

#ifdef SB_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return sb::fuzz::FuzzCaseFile(data, size);
}
#endif
