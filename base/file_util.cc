#include "base/file_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace sb {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return MakeError("cannot open " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return MakeError("cannot read " + path);
  return ss.str();
}

Status WriteFileAtomic(const std::string& path, const std::string& data) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return MakeError("cannot write " + path + ": " + std::strerror(errno));
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::string msg = std::strerror(errno);
      close(fd);
      unlink(tmp.c_str());
      return MakeError("cannot write " + path + ": " + msg);
    }
    off += static_cast<size_t>(n);
  }
  if (close(fd) != 0 || rename(tmp.c_str(), path.c_str()) != 0) {
    std::string msg = std::strerror(errno);
    unlink(tmp.c_str());
    return MakeError("cannot write " + path + ": " + msg);
  }
  return Status::Ok();
}

Status CheckWritable(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p(path);
  fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return MakeError("cannot write " + path + ": no directory " + dir.string());
  if (fs::is_directory(p, ec)) return MakeError("cannot write " + path + ": it is a directory");
  if (fs::exists(p, ec) && access(p.c_str(), W_OK) != 0)
    return MakeError("cannot write " + path + ": " + std::strerror(errno));
  // Create (and remove) the very temporary file WriteFileAtomic will use: permission bits do
  // not stop root, but read-only mounts, /proc and /sys, quotas and full inode tables do.
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return Status::Ok();  // left by an earlier run with our pid: writable
    return MakeError("cannot write " + path + ": " + std::strerror(errno));
  }
  close(fd);
  unlink(tmp.c_str());
  return Status::Ok();
}

}  // namespace sb
