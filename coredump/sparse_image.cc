#include "coredump/sparse_image.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace sb::coredump {
namespace {

constexpr size_t kPage = 4096;
constexpr size_t kWindow = 1 << 20;  // decompressed bytes scanned per pass

bool AllZero(const char* p, size_t n) { return n == 0 || (p[0] == 0 && std::memcmp(p, p + 1, n - 1) == 0); }

Status PwriteAll(int fd, const char* p, size_t n, uint64_t off, const std::string& name) {
  while (n > 0) {
    ssize_t w = pwrite(fd, p, n, static_cast<off_t>(off));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return MakeError(name + ": write: " + std::strerror(w < 0 ? errno : ENOSPC));
    p += w;
    n -= static_cast<size_t>(w);
    off += static_cast<uint64_t>(w);
  }
  return Status::Ok();
}

}  // namespace

Result<SparseStats> WriteSparse(Decompressor& d, int fd, uint64_t max_size, const std::string& name) {
  std::vector<char> win(kWindow);
  SparseStats st;
  bool end = false;
  while (!end) {
    size_t have = 0;
    while (have < win.size()) {
      auto n = d.Read(win.data() + have, win.size() - have);
      if (!n.ok()) return MakeError(name + ": " + n.error());
      if (*n == 0) {
        end = true;
        break;
      }
      have += *n;
    }
    if (st.size + have > max_size)
      return MakeError(name + ": decompresses to more than the limit of " + std::to_string(max_size) + " bytes");
    // Runs of non-zero pages, each written with one pwrite.
    size_t run = 0, pos = 0;
    auto flush = [&](size_t upto) -> Status {
      if (upto > run) {
        if (auto s = PwriteAll(fd, win.data() + run, upto - run, st.size + run, name); !s.ok()) return s;
        st.stored += upto - run;
      }
      return Status::Ok();
    };
    for (; pos < have; pos += kPage) {
      size_t len = std::min(kPage, have - pos);
      if (AllZero(win.data() + pos, len)) {
        if (auto s = flush(pos); !s.ok()) return MakeError(s.error());
        run = pos + len;
      }
    }
    if (auto s = flush(have); !s.ok()) return MakeError(s.error());
    st.size += have;
  }
  if (ftruncate(fd, static_cast<off_t>(st.size)) != 0)
    return MakeError(name + ": ftruncate: " + std::strerror(errno));
  return st;
}

Result<std::unique_ptr<SparseImage>> SparseImage::Decompress(Decompressor& d, const std::string& name,
                                                             uint64_t max_size) {
  int fd = memfd_create("switchback-core", MFD_CLOEXEC);
  if (fd < 0) return MakeError(name + ": memfd_create: " + std::strerror(errno));
  std::unique_ptr<SparseImage> img(new SparseImage());
  img->fd_ = fd;
  img->path_ = "/proc/self/fd/" + std::to_string(fd);
  auto st = WriteSparse(d, fd, max_size, name);
  if (!st.ok()) return st.take_error();
  img->stats_ = *st;
  return img;
}

Result<std::unique_ptr<SparseImage>> SparseImage::FromFile(const std::string& path, uint64_t max_size) {
  Compression c = Compression::kNone;
  auto d = OpenDecompressed(path, &c);
  if (!d.ok()) return d.take_error();
  auto img = Decompress(**d, path == "-" ? "standard input" : path, max_size);
  if (!img.ok()) return img.take_error();
  (*img)->compression_ = c;
  return img;
}

SparseImage::~SparseImage() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace sb::coredump
