// Fuzz target: Go build info reader and version parser on arbitrary bytes.
#include <string>

#include "symbolizer/go_buildinfo.h"
#include "tests/fuzz/fuzz_targets.h"

namespace sb::fuzz {

int FuzzBuildInfo(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  int major = 0, minor = 0;
  (void)sym::ParseGoVersion(bytes.substr(0, 64), &major, &minor);
  auto elf = sym::ElfFile::FromBytes(std::move(bytes), "fuzz");
  if (!elf.ok()) return 0;
  auto bi = sym::ReadGoBuildInfo(**elf);
  if (bi.ok()) (void)sym::ParseGoVersion(bi->go_version, &major, &minor);
  return 0;
}

}  // namespace sb::fuzz

#ifdef SB_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return sb::fuzz::FuzzBuildInfo(data, size);
}
#endif
