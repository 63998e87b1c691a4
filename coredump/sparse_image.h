// Decompressed files whose all-zero pages are holes. A Go core is mostly zeros (gcore writes
// the untouched part of every heap arena): the 91 cases hold 6.55 GiB of core of which about
// 250 MB is not zero. Written sparse, a core costs only its non-zero pages, whether it lives
// in memory (SparseImage, a memfd) or on disk (WriteSparse into a scratch file).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/result.h"
#include "coredump/decompress.h"

namespace sb::coredump {

struct SparseStats {
  uint64_t size = 0;    // bytes of output (the file's length)
  uint64_t stored = 0;  // bytes actually written (non-zero pages)
};

// Writes everything `d` produces to fd from offset 0, skipping all-zero 4 KiB pages (they stay
// holes), and sets the file's length. Errors past max_size bytes of output. `name` is for errors.
Result<SparseStats> WriteSparse(Decompressor& d, int fd, uint64_t max_size, const std::string& name);

// A decompressed file held in memory, zero pages as holes: a memfd, opened by path() like any
// file (ElfFile maps it). Freed when the last user (this object, a mapping) lets go.
class SparseImage {
 public:
  static Result<std::unique_ptr<SparseImage>> Decompress(Decompressor& d, const std::string& name,
                                                         uint64_t max_size = uint64_t{64} << 30);
  // Opens PATH ("-" for standard input), detecting zstd, lz4, xz or raw.
  static Result<std::unique_ptr<SparseImage>> FromFile(const std::string& path,
                                                       uint64_t max_size = uint64_t{64} << 30);
  ~SparseImage();
  SparseImage(const SparseImage&) = delete;
  SparseImage& operator=(const SparseImage&) = delete;

  const std::string& path() const { return path_; }  // "/proc/self/fd/N"
  const SparseStats& stats() const { return stats_; }
  Compression compression() const { return compression_; }

 private:
  SparseImage() = default;
  int fd_ = -1;
  std::string path_;
  SparseStats stats_;
  Compression compression_ = Compression::kNone;
};

}  // namespace sb::coredump
