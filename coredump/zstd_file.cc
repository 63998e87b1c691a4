// zstd helpers for test data: one-shot compression, streaming decompression with a size
// limit, and a cache of extracted files keyed by source path, size and mtime.
#include "coredump/zstd_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <cstdint>
#include <filesystem>

#include "base/file_util.h"
#include "coredump/sparse_image.h"

namespace sb::coredump {
namespace {

// Above this size the caller's level is capped: level 19 on a 1 GB core takes minutes, while
// level 9 is seconds and compresses the zero-filled arenas of a Go core just as well.
constexpr size_t kBigInput = size_t{64} << 20;
constexpr int kBigInputMaxLevel = 9;

std::string ZstdErr(size_t code) { return ZSTD_getErrorName(code); }

uint64_t Fnv1a(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

Result<std::string> ZstdCompress(std::string_view data, int level) {
  if (level < 1) level = 1;
  if (level > ZSTD_maxCLevel()) level = ZSTD_maxCLevel();
  if (data.size() > kBigInput && level > kBigInputMaxLevel) level = kBigInputMaxLevel;
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  if (cctx == nullptr) return MakeError("zstd: cannot create a compression context");
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  std::string out(ZSTD_compressBound(data.size()), '\0');
  size_t n = ZSTD_compress2(cctx, out.data(), out.size(), data.data(), data.size());
  ZSTD_freeCCtx(cctx);
  if (ZSTD_isError(n)) return MakeError("zstd compression failed: " + ZstdErr(n));
  out.resize(n);
  return out;
}

Result<std::string> ZstdDecompress(std::string_view data, size_t max_size) {
  if (data.empty()) return MakeError("not zstd data: empty input");
  uint32_t magic = 0;
  if (data.size() >= 4) std::memcpy(&magic, data.data(), 4);
  const bool skippable = (magic & 0xFFFFFFF0u) == 0x184D2A50u;
  if (data.size() < 4 || (magic != ZSTD_MAGICNUMBER && !skippable)) {
    return MakeError("not zstd data (bad magic)");
  }
  std::string out;
  unsigned long long declared = ZSTD_getFrameContentSize(data.data(), data.size());
  if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != ZSTD_CONTENTSIZE_ERROR) {
    if (declared > max_size) {
      return MakeError("zstd data decompresses to " + std::to_string(declared) +
                       " bytes, more than the limit of " + std::to_string(max_size));
    }
    out.reserve(static_cast<size_t>(std::min<unsigned long long>(declared, 1ull << 30)));
  }
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  if (dctx == nullptr) return MakeError("zstd: cannot create a decompression context");
  ZSTD_inBuffer in{data.data(), data.size(), 0};
  const size_t chunk = ZSTD_DStreamOutSize();
  size_t last = 1;  // 0 once a frame has ended with no further input
  std::string err;
  while (true) {
    size_t old = out.size();
    // Leave room for one byte past the limit, so that exceeding it is seen.
    size_t cap = max_size - old;
    size_t room = std::min(chunk, cap == SIZE_MAX ? cap : cap + 1);
    out.resize(old + room);
    ZSTD_outBuffer ob{out.data() + old, room, 0};
    last = ZSTD_decompressStream(dctx, &ob, &in);
    out.resize(old + ob.pos);
    if (ZSTD_isError(last)) {
      err = "corrupt zstd data: " + ZstdErr(last);
      break;
    }
    if (out.size() > max_size) {
      err = "zstd data decompresses to more than the limit of " + std::to_string(max_size) + " bytes";
      break;
    }
    if (in.pos == in.size && ob.pos < room) break;  // all input consumed and flushed
  }
  ZSTD_freeDCtx(dctx);
  if (!err.empty()) return MakeError(err);
  if (last != 0) return MakeError("truncated zstd data (the frame does not end)");
  return out;
}

Result<std::string> ExtractZstdFile(const std::string& path, const std::string& cache_dir) {
  namespace fs = std::filesystem;
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return MakeError(path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return MakeError(path + ": not a regular file");

  std::error_code ec;
  fs::path abs = fs::absolute(path, ec);
  std::string stem = fs::path(path).filename().string();
  if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".zst") == 0) stem.resize(stem.size() - 4);
  if (stem.empty()) stem = "file";
  // Key: the source's absolute path, size and mtime. Changing the source gives a new key,
  // so an extraction found under the key is always the current one.
  uint64_t mtime_ns = static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000ull +
                      static_cast<uint64_t>(st.st_mtim.tv_nsec);
  std::string key_src = abs.string() + '\0' + std::to_string(st.st_size) + '\0' + std::to_string(mtime_ns);
  char key[17];
  snprintf(key, sizeof(key), "%016llx", static_cast<unsigned long long>(Fnv1a(key_src)));
  fs::path dir = fs::path(cache_dir) / (stem + "-" + key);
  fs::path out = dir / stem;

  struct stat ost;
  if (stat(out.c_str(), &ost) == 0 && S_ISREG(ost.st_mode)) return out.string();

  fs::create_directories(dir, ec);
  if (ec) return MakeError("cannot create " + dir.string() + ": " + ec.message());
  // Streamed, with all-zero pages left as holes: the scratch disk holds only non-zero bytes,
  // and no whole copy of the file is ever in memory.
  Compression c = Compression::kNone;
  auto d = OpenDecompressed(path, &c);
  if (!d.ok()) return d.take_error();
  if (c == Compression::kNone) return MakeError(path + ": not zstd data (bad magic)");
  std::string tmp = out.string() + ".tmp" + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, (st.st_mode & 0111) != 0 ? 0755 : 0644);
  if (fd < 0) return MakeError(tmp + ": " + std::strerror(errno));
  auto w = WriteSparse(**d, fd, uint64_t{64} << 30, path);
  bool closed = close(fd) == 0;
  if (!w.ok() || !closed || rename(tmp.c_str(), out.c_str()) != 0) {
    std::string why = !w.ok() ? w.error() : tmp + ": " + std::strerror(errno);
    unlink(tmp.c_str());
    return MakeError(why);
  }
  return out.string();
}

}  // namespace sb::coredump
