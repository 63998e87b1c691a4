// Fuzz target: the DWARF lookup of the runtime's struct offsets (unwinder/dwarf_offsets.cc,
// libdwarf). libdwarf reads from a file descriptor, so the input goes into a memfd and is
// opened through /proc/self/fd. Seeds: a tiny ELF whose DWARF describes C structs renamed to
// runtime.g / runtime.m / runtime.gobuf / runtime.stack (tests/fuzz/seeds/go_structs.c), plain,
// zlib-compressed (SHF_COMPRESSED and .zdebug_*) and DWARF 5. The same file also goes through
// the location-list readers of unwinder/dwarf_spill_proof.cc (mcall callees' gp, newstack's
// morebuf and the type it names).
#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "tests/fuzz/fuzz_targets.h"
#include "unwinder/dwarf_offsets.h"
#include "unwinder/dwarf_spill_proof.h"

namespace sb::fuzz {

int FuzzDwarfOffsets(const uint8_t* data, size_t size) {
  int fd = memfd_create("fuzz_dwarf", MFD_CLOEXEC);
  if (fd < 0) return 0;
  size_t off = 0;
  while (off < size) {
    ssize_t n = write(fd, data + off, size - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  if (off == size) {
    std::string path = "/proc/self/fd/" + std::to_string(fd);
    (void)unwinder::GoOffsetsFromDwarf(path);
    (void)unwinder::GpStackHomes(path, {"runtime.park_m", "runtime.exitsyscall0"});
    (void)unwinder::NewstackMorebufHome(path);
  }
  close(fd);
  return 0;
}

}  // namespace sb::fuzz

#ifdef SB_LIBFUZZER
// Debian's libdwarf (20210528, not instrumented) sizes its section header array from header
// fields before checking them against the file, and asks malloc for up to hundreds of GB.
// Outside ASan malloc returns null and libdwarf reports an error ("unreadable DWARF"), which is
// the behaviour to fuzz; under ASan's default that allocation aborts the run instead.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return sb::fuzz::FuzzDwarfOffsets(data, size);
}
#endif
