// gzip framing for pprof files, which are always gzip-compressed protobuf on disk.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace sb::profile {

// True when DATA starts with the gzip magic bytes 1f 8b.
bool LooksGzipped(std::string_view data);

// Compresses DATA into one gzip member (with header and CRC, readable by gunzip and pprof).
Result<std::string> GzipCompress(std::string_view data);

// Decompresses a gzip stream. Output beyond MAX_OUTPUT bytes is an error, so a tiny
// hostile file cannot exhaust memory.
Result<std::string> GzipDecompress(std::string_view data, size_t max_output);

}  // namespace sb::profile
