// Fuzz target: compressed-core detection and the zstd, lz4 and xz decoders on arbitrary bytes
// (a --core from production may be anything), with a small output limit so that a tiny input
// claiming gigabytes is cut short, then the same bytes through the sparse writer.
#include <unistd.h>
#include <sys/mman.h>

#include <string>

#include "coredump/decompress.h"
#include "coredump/sparse_image.h"
#include "tests/fuzz/fuzz_targets.h"

namespace sb::fuzz {

int FuzzDecompress(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  (void)coredump::CompressionName(coredump::DetectCompression(in));
  auto out = coredump::DecompressAny(in, 1 << 20);
  // Every format, whatever the magic says: the decoders' own checks must hold.
  for (auto c : {coredump::Compression::kZstd, coredump::Compression::kLz4, coredump::Compression::kXz}) {
    auto d = coredump::MakeDecompressor(c, std::string(in), nullptr);
    if (!d.ok()) continue;
    char buf[4096];
    size_t total = 0;
    while (total < (1 << 20)) {
      auto n = (*d)->Read(buf, sizeof(buf));
      if (!n.ok() || *n == 0) break;
      total += *n;
    }
  }
  auto d = coredump::MakeDecompressor(coredump::DetectCompression(in), std::string(in), nullptr);
  if (d.ok()) {
    int fd = memfd_create("fuzz", MFD_CLOEXEC);
    if (fd >= 0) {
      (void)coredump::WriteSparse(**d, fd, 1 << 20, "fuzz");
      close(fd);
    }
  }
  return 0;
}

}  // namespace sb::fuzz

#ifdef SB_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return sb::fuzz::FuzzDecompress(data, size);
}
#endif
