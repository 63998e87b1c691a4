// Streaming decompression of the cores production writes: zstd (systemd-coredump's default),
// lz4 and xz, told apart by their magic bytes, so that a caller never needs to know (or trust
// the file name). Data without a known magic passes through unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"

namespace sb::coredump {

enum class Compression { kNone, kZstd, kLz4, kXz };

// By the first bytes of a stream: zstd 28 b5 2f fd (or a skippable frame 5? 2a 4d 18), lz4
// frame 04 22 4d 18, xz fd 37 7a 58 5a 00. Anything else (an ELF core) is kNone.
Compression DetectCompression(std::string_view head);
const char* CompressionName(Compression c);  // "raw", "zstd", "lz4", "xz"

// Where compressed bytes come from: fills dst with up to n bytes, returns how many (0 at the end).
using ByteSource = std::function<Result<size_t>(char* dst, size_t n)>;

// Pulls decompressed bytes. Read returns 0 only at the end of a complete stream; a truncated or
// corrupt stream is an error naming the format.
class Decompressor {
 public:
  virtual ~Decompressor() = default;
  virtual Result<size_t> Read(char* dst, size_t n) = 0;
};

// `head` is the first bytes of the stream (already taken from `src`); the decoder starts with them.
Result<std::unique_ptr<Decompressor>> MakeDecompressor(Compression c, std::string head, ByteSource src);

// Opens a file ("-" for standard input) and detects its compression from the first bytes.
// *compression (if given) receives what was detected.
Result<std::unique_ptr<Decompressor>> OpenDecompressed(const std::string& path, Compression* compression = nullptr);

// Whole-buffer form (fuzzing, tests, small inputs): errors past max_size bytes of output.
Result<std::string> DecompressAny(std::string_view data, size_t max_size);

}  // namespace sb::coredump
