// Fuzz target: ReadPprofGz on arbitrary bytes (gzip or raw protobuf). Anything it accepts
// must be consistent enough for every writer to take, so those run on it too.
#include <cstdlib>
#include <string_view>

#include "profile/pprof_reader.h"
#include "profile/writers.h"
#include "tests/fuzz/fuzz_targets.h"

namespace sb::fuzz {

int FuzzPprofReader(const uint8_t* data, size_t size) {
  auto p = profile::ReadPprofGz(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!p.ok()) return 0;
  // The reader checked every id and index, so the writer has no reason to refuse.
  if (!profile::WritePprofGz(*p).ok()) std::abort();
  (void)profile::WriteFolded(*p);
  (void)profile::WriteTopTable(*p, 20);
  (void)profile::WriteFlameGraphSvg(*p, "fuzz");
  return 0;
}

}  // namespace sb::fuzz

#ifdef SB_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return sb::fuzz::FuzzPprofReader(data, size);
}
#endif
