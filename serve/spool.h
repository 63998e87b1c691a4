// The push spool, DIR/spool: windows waiting for the profile backend, one pair of files each
// (SEQ.pb.gz, the profile, hard-linked from the window file when the file system allows, else
// copied; SEQ.json, where to send it), numbered in arrival order. An item exists once its
// .json is renamed into place, and is gone once that .json is removed, so a crash leaves
// either a whole item or leftovers that Open() cleans up. Bounded in bytes: adding beyond the
// bound drops the oldest items first. Not thread-safe (the Pusher holds it under its lock).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace sb::serve {

struct SpoolItem {
  uint64_t seq = 0;
  std::string name;   // Pyroscope application name with labels: app.cpu{k=v}
  int64_t from = 0;   // unix seconds
  int64_t until = 0;
  uint32_t pid = 0;
  std::string exe;
  uint64_t bytes = 0;      // size of the profile
  std::string data_path;   // SEQ.pb.gz
};

class Spool {
 public:
  // Creates DIR if needed and loads what an earlier run left, oldest first; LOG gets one line
  // per leftover removed.
  static Result<std::unique_ptr<Spool>> Open(const std::string& dir, uint64_t max_bytes,
                                             const std::function<void(const std::string&)>& log);

  // Takes a copy of PROFILE_PATH (ITEM's seq, bytes and data_path are filled in). Items are
  // dropped oldest first, never KEEP_SEQ (the one being sent), until the new one fits; an item
  // bigger than the whole bound is itself dropped. DROPPED gets what was dropped.
  Result<SpoolItem> Add(const std::string& profile_path, SpoolItem item, uint64_t keep_seq,
                        std::vector<SpoolItem>* dropped);
  std::optional<SpoolItem> Oldest() const;
  // After the backend's successful answer (or a final refusal): the item is gone for good.
  Status Remove(uint64_t seq);

  uint64_t windows() const { return items_.size(); }
  uint64_t bytes() const { return bytes_; }
  const std::string& dir() const { return dir_; }

 private:
  Spool(std::string dir, uint64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}
  std::string PathOf(uint64_t seq, const char* ext) const;
  Status RemoveFiles(uint64_t seq);

  std::string dir_;
  uint64_t max_bytes_;
  uint64_t next_seq_ = 1;
  uint64_t bytes_ = 0;
  std::map<uint64_t, SpoolItem> items_;
};

// The .json of an item (split out for the fuzz target and tests).
std::string SpoolMetaJson(const SpoolItem& item);
Result<SpoolItem> ParseSpoolMeta(const std::string& text);

}  // namespace sb::serve
