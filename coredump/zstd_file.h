// zstd compression of test data (cores and binaries are stored compressed in testdata/).
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace sb::coredump {

// Inputs above 64 MB are compressed at level min(level, 9): 19 would take minutes on a big
// core with real heap contents, for a few percent.
Result<std::string> ZstdCompress(std::string_view data, int level = 19);
// Errors for garbage or truncated input; refuses outputs larger than max_size.
Result<std::string> ZstdDecompress(std::string_view data, size_t max_size = size_t{8} << 30);

// Decompresses PATH (zstd, lz4, xz or raw) into a sparse cache file under CACHE_DIR, reusing
// an earlier extraction when it is newer than the source. Returns the extracted path.
Result<std::string> ExtractZstdFile(const std::string& path, const std::string& cache_dir);

}  // namespace sb::coredump
