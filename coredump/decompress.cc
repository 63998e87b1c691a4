// Pull-style decoders over libzstd, liblz4 (frame format) and liblzma, one class each, plus
// magic-byte detection. All three accept concatenated frames/streams (zstd -c a b, cat x.xz
// y.xz), as their command-line tools do.
#include "coredump/decompress.h"

#include <fcntl.h>
#include <lz4frame.h>
#include <lzma.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace sb::coredump {
namespace {

constexpr size_t kInChunk = 256 << 10;
// xz streams name their dictionary size; a hostile header must not make us allocate gigabytes
// (xz -9 needs 64 MiB to decode).
constexpr uint64_t kXzMemLimit = uint64_t{512} << 20;

// Feeds `head` first, then the source, through one input buffer.
class Input {
 public:
  Input(std::string head, ByteSource src) : buf_(std::move(head)), src_(std::move(src)) {}
  const char* data() const { return buf_.data() + pos_; }
  size_t avail() const { return buf_.size() - pos_; }
  void Consume(size_t n) { pos_ += n; }
  bool eof() const { return eof_; }
  // Refills once the buffer is used up; sets eof at the source's end.
  Status Refill() {
    if (avail() > 0 || eof_) return Status::Ok();
    buf_.resize(kInChunk);
    pos_ = 0;
    auto n = src_ ? src_(buf_.data(), buf_.size()) : Result<size_t>(size_t{0});
    if (!n.ok()) {
      buf_.clear();
      return MakeError(n.error());
    }
    buf_.resize(*n);
    if (*n == 0) eof_ = true;
    return Status::Ok();
  }

 private:
  std::string buf_;
  size_t pos_ = 0;
  ByteSource src_;
  bool eof_ = false;
};

class RawReader : public Decompressor {
 public:
  explicit RawReader(Input in) : in_(std::move(in)) {}
  Result<size_t> Read(char* dst, size_t n) override {
    if (auto st = in_.Refill(); !st.ok()) return MakeError(st.error());
    size_t take = std::min(n, in_.avail());
    std::memcpy(dst, in_.data(), take);
    in_.Consume(take);
    return take;
  }

 private:
  Input in_;
};

class ZstdReader : public Decompressor {
 public:
  explicit ZstdReader(Input in) : in_(std::move(in)), d_(ZSTD_createDCtx()) {}
  ~ZstdReader() override { ZSTD_freeDCtx(d_); }
  Result<size_t> Read(char* dst, size_t n) override {
    if (d_ == nullptr) return MakeError("zstd: cannot create a decompression context");
    ZSTD_outBuffer out{dst, n, 0};
    while (true) {
      if (auto st = in_.Refill(); !st.ok()) return MakeError(st.error());
      ZSTD_inBuffer ib{in_.data(), in_.avail(), 0};
      size_t r = ZSTD_decompressStream(d_, &out, &ib);
      in_.Consume(ib.pos);
      if (ZSTD_isError(r)) return MakeError(std::string("corrupt zstd data: ") + ZSTD_getErrorName(r));
      // A call that moved nothing (no input left after a frame's end) says nothing about
      // whether the stream is complete: it would report the next frame's header as missing.
      if (ib.pos > 0 || out.pos > 0) last_ = r;
      if (out.pos > 0) return out.pos;
      if (in_.avail() == 0 && in_.eof()) {
        if (last_ != 0) return MakeError("truncated zstd data (the frame does not end)");
        return size_t{0};
      }
    }
  }

 private:
  Input in_;
  ZSTD_DCtx* d_;
  size_t last_ = 1;  // 0 once a frame has ended
};

class Lz4Reader : public Decompressor {
 public:
  explicit Lz4Reader(Input in) : in_(std::move(in)) {
    if (LZ4F_isError(LZ4F_createDecompressionContext(&d_, LZ4F_VERSION))) d_ = nullptr;
  }
  ~Lz4Reader() override {
    if (d_ != nullptr) LZ4F_freeDecompressionContext(d_);
  }
  Result<size_t> Read(char* dst, size_t n) override {
    if (d_ == nullptr) return MakeError("lz4: cannot create a decompression context");
    while (true) {
      if (auto st = in_.Refill(); !st.ok()) return MakeError(st.error());
      size_t dn = n, sn = in_.avail();
      size_t r = LZ4F_decompress(d_, dst, &dn, in_.data(), &sn, nullptr);
      in_.Consume(sn);
      if (LZ4F_isError(r)) return MakeError(std::string("corrupt lz4 data: ") + LZ4F_getErrorName(r));
      if (sn > 0 || dn > 0) last_ = r;  // as in ZstdReader
      if (dn > 0) return dn;
      if (in_.avail() == 0 && in_.eof()) {
        if (last_ != 0) return MakeError("truncated lz4 data (the frame does not end)");
        return size_t{0};
      }
      if (sn == 0 && in_.avail() > 0) return MakeError("corrupt lz4 data: no progress");
    }
  }

 private:
  Input in_;
  LZ4F_dctx* d_ = nullptr;
  size_t last_ = 1;
};

class XzReader : public Decompressor {
 public:
  explicit XzReader(Input in) : in_(std::move(in)) {
    ok_ = lzma_stream_decoder(&s_, kXzMemLimit, LZMA_CONCATENATED) == LZMA_OK;
  }
  ~XzReader() override { lzma_end(&s_); }
  Result<size_t> Read(char* dst, size_t n) override {
    if (!ok_) return MakeError("xz: cannot create a decoder");
    if (done_) return size_t{0};
    s_.next_out = reinterpret_cast<uint8_t*>(dst);
    s_.avail_out = n;
    while (true) {
      if (auto st = in_.Refill(); !st.ok()) return MakeError(st.error());
      s_.next_in = reinterpret_cast<const uint8_t*>(in_.data());
      s_.avail_in = in_.avail();
      lzma_ret r = lzma_code(&s_, in_.eof() ? LZMA_FINISH : LZMA_RUN);
      in_.Consume(in_.avail() - s_.avail_in);
      size_t got = n - s_.avail_out;
      if (r == LZMA_STREAM_END) {
        done_ = true;
        return got;
      }
      if (r == LZMA_BUF_ERROR) return MakeError("truncated xz data (the stream does not end)");
      if (r == LZMA_MEMLIMIT_ERROR) return MakeError("xz data needs more than 512 MiB of memory to decode");
      if (r != LZMA_OK) return MakeError("corrupt xz data (liblzma error " + std::to_string(r) + ")");
      if (got > 0) return got;
    }
  }

 private:
  Input in_;
  lzma_stream s_ = LZMA_STREAM_INIT;
  bool ok_ = false;
  bool done_ = false;
};

bool StartsWith(std::string_view s, const char* magic, size_t n) {
  return s.size() >= n && std::memcmp(s.data(), magic, n) == 0;
}

}  // namespace

Compression DetectCompression(std::string_view head) {
  if (StartsWith(head, "\x28\xb5\x2f\xfd", 4)) return Compression::kZstd;
  // A zstd stream may start with a skippable frame (magic 0x184D2A5?, little-endian).
  if (head.size() >= 4 && (static_cast<uint8_t>(head[0]) & 0xf0) == 0x50 && StartsWith(head.substr(1), "\x2a\x4d\x18", 3))
    return Compression::kZstd;
  if (StartsWith(head, "\x04\x22\x4d\x18", 4)) return Compression::kLz4;
  if (StartsWith(head, "\xfd" "7zXZ\x00", 6)) return Compression::kXz;
  return Compression::kNone;
}

const char* CompressionName(Compression c) {
  switch (c) {
    case Compression::kZstd: return "zstd";
    case Compression::kLz4: return "lz4";
    case Compression::kXz: return "xz";
    case Compression::kNone: break;
  }
  return "raw";
}

Result<std::unique_ptr<Decompressor>> MakeDecompressor(Compression c, std::string head, ByteSource src) {
  Input in(std::move(head), std::move(src));
  std::unique_ptr<Decompressor> d;
  switch (c) {
    case Compression::kZstd: d = std::make_unique<ZstdReader>(std::move(in)); break;
    case Compression::kLz4: d = std::make_unique<Lz4Reader>(std::move(in)); break;
    case Compression::kXz: d = std::make_unique<XzReader>(std::move(in)); break;
    case Compression::kNone: d = std::make_unique<RawReader>(std::move(in)); break;
  }
  return d;
}

Result<std::unique_ptr<Decompressor>> OpenDecompressed(const std::string& path, Compression* compression) {
  const bool stdin_input = path == "-";
  int fd = stdin_input ? 0 : open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return MakeError(path + ": " + std::strerror(errno));
  // The fd lives as long as the source; standard input is not ours to close.
  std::shared_ptr<int> owned(new int(fd), [stdin_input](int* p) {
    if (!stdin_input) close(*p);
    delete p;
  });
  std::string name = stdin_input ? "standard input" : path;
  ByteSource src = [owned, name](char* dst, size_t n) -> Result<size_t> {
    while (true) {
      ssize_t r = read(*owned, dst, n);
      if (r >= 0) return static_cast<size_t>(r);
      if (errno != EINTR) return MakeError(name + ": read: " + std::strerror(errno));
    }
  };
  // Enough bytes to tell the formats apart (a pipe may deliver them a few at a time).
  std::string head;
  char buf[4096];
  while (head.size() < 6) {
    auto n = src(buf, sizeof(buf));
    if (!n.ok()) return n.take_error();
    if (*n == 0) break;
    head.append(buf, *n);
  }
  if (head.empty()) return MakeError(name + ": empty input");
  Compression c = DetectCompression(head);
  if (compression != nullptr) *compression = c;
  return MakeDecompressor(c, std::move(head), std::move(src));
}

Result<std::string> DecompressAny(std::string_view data, size_t max_size) {
  Compression c = DetectCompression(data);
  auto d = MakeDecompressor(c, std::string(data), nullptr);
  if (!d.ok()) return d.take_error();
  std::string out;
  std::vector<char> buf(64 << 10);
  while (true) {
    auto n = (*d)->Read(buf.data(), buf.size());
    if (!n.ok()) return n.take_error();
    if (*n == 0) break;
    if (*n > max_size - std::min(max_size, out.size()))
      return MakeError(std::string(CompressionName(c)) + " data decompresses to more than " + std::to_string(max_size) +
                       " bytes");
    out.append(buf.data(), *n);
  }
  return out;
}

}  // namespace sb::coredump
