// Fuzz target: the build-id notes of an executable's first page as a core holds it (the page
// comes from a production core: anything), and their comparison with a binary's ids.
#include <string>

#include "coredump/build_id_note.h"
#include "tests/fuzz/fuzz_targets.h"

namespace sb::fuzz {

int FuzzBuildIdNote(const uint8_t* data, size_t size) {
  std::string_view page(reinterpret_cast<const char*>(data), size);
  auto ids = coredump::BuildIdsFromHeaderPage(page);
  if (!ids.ok()) return 0;
  (void)coredump::CompareBuildIds(*ids, coredump::BuildIds{"00ff", "go-id"});
  (void)coredump::CompareBuildIds(*ids, *ids);
  return 0;
}

}  // namespace sb::fuzz

#ifdef SB_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return sb::fuzz::FuzzBuildIdNote(data, size);
}
#endif
