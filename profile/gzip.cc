#include "profile/gzip.h"

#include <zlib.h>

#include <algorithm>

namespace sb::profile {
namespace {

// zlib's avail_in/avail_out are 32-bit; feed and drain it in chunks that always fit.
constexpr size_t kChunk = 1 << 20;

// 16 + MAX_WBITS asks zlib for gzip framing (header + CRC32 trailer) instead of raw zlib.
constexpr int kGzipWindowBits = 16 + MAX_WBITS;

}  // namespace

bool LooksGzipped(std::string_view data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

Result<std::string> GzipCompress(std::string_view data) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, kGzipWindowBits, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    return MakeError("gzip: deflateInit2 failed");
  }
  std::string out;
  size_t consumed = 0;
  int rc = Z_OK;
  do {
    size_t in_now = std::min(kChunk, data.size() - consumed);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + consumed));
    zs.avail_in = static_cast<uInt>(in_now);
    consumed += in_now;
    int flush = consumed == data.size() ? Z_FINISH : Z_NO_FLUSH;
    do {
      size_t old = out.size();
      out.resize(old + kChunk);
      zs.next_out = reinterpret_cast<Bytef*>(out.data() + old);
      zs.avail_out = static_cast<uInt>(kChunk);
      rc = deflate(&zs, flush);
      out.resize(old + kChunk - zs.avail_out);
      if (rc == Z_STREAM_ERROR) {
        deflateEnd(&zs);
        return MakeError("gzip: deflate failed");
      }
    } while (zs.avail_out == 0);
  } while (rc != Z_STREAM_END);
  deflateEnd(&zs);
  return out;
}

Result<std::string> GzipDecompress(std::string_view data, size_t max_output) {
  z_stream zs{};
  if (inflateInit2(&zs, kGzipWindowBits) != Z_OK) return MakeError("gzip: inflateInit2 failed");
  std::string out;
  size_t consumed = 0;
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (zs.avail_in == 0) {
      if (consumed == data.size()) {
        inflateEnd(&zs);
        return MakeError("gzip: truncated stream");
      }
      size_t in_now = std::min(kChunk, data.size() - consumed);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + consumed));
      zs.avail_in = static_cast<uInt>(in_now);
      consumed += in_now;
    }
    size_t old = out.size();
    out.resize(old + kChunk);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + old);
    zs.avail_out = static_cast<uInt>(kChunk);
    rc = inflate(&zs, Z_NO_FLUSH);
    out.resize(old + kChunk - zs.avail_out);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      std::string msg = zs.msg != nullptr ? zs.msg : "error " + std::to_string(rc);
      inflateEnd(&zs);
      return MakeError("gzip: corrupt data (" + msg + ")");
    }
    if (out.size() > max_output) {
      inflateEnd(&zs);
      return MakeError("gzip: decompressed size exceeds " + std::to_string(max_output) + " bytes");
    }
  }
  inflateEnd(&zs);
  return out;
}

}  // namespace sb::profile
