// Bounded history: window files older than --keep, then the oldest until DIR holds at most
// --max-disk bytes, are deleted (with their index lines). Run at start and after every window.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"

namespace sb::agent {

struct RetentionPolicy {
  int64_t keep_ns = 0;     // 0: no age limit
  uint64_t max_disk = 0;   // bytes, 0: no size limit
};

struct StoredWindow {
  std::string rel_path;  // "2026-12-01/210603Z-demo-1234.pb.gz"
  int64_t start_unix_s = 0;  // from the name
  int64_t written_unix_s = 0;  // modification time: the window's end
  uint64_t bytes = 0;
};

// Window files under DIR (DIR/YYYY-MM-DD/*.pb.gz named by the agent), oldest first.
std::vector<StoredWindow> ListWindows(const std::string& dir);
// Bytes DIR holds: window files and the index.
uint64_t DiskUsage(const std::string& dir);

struct RetentionResult {
  std::vector<std::string> deleted;  // relative paths, oldest first
  std::vector<std::string> errors;   // one line each
};
// Deletes by POLICY at time NOW (unix seconds; a window's age counts from its end, when its
// file was written), removes emptied day folders and rewrites the
// index without the deleted files.
RetentionResult ApplyRetention(const std::string& dir, const RetentionPolicy& policy, int64_t now_unix_s);

// Removes temporary files a killed agent left ("*.tmp.*" under DIR); returns how many.
size_t RemoveLeftoverTemporaries(const std::string& dir);

// "24h", "90s", "30m", "7d", "1h30m" -> nanoseconds; a one-line error otherwise.
Result<int64_t> ParseDuration(const std::string& text);
// "1GiB", "500MiB", "10MB", "4096" -> bytes.
Result<uint64_t> ParseSize(const std::string& text);

}  // namespace sb::agent
