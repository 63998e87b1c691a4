// DIR/index.jsonl: one JSON object per window file, appended after the file is renamed into
// place, rewritten without the deleted files after retention. `merge` finds its windows here.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace sb::agent {

struct IndexEntry {
  std::string path;  // relative to DIR: "2026-12-01/210603Z-demo-1234.pb.gz"
  int64_t start_unix_ns = 0;
  int64_t duration_ns = 0;
  uint32_t pid = 0;
  std::string exe;
  std::map<std::string, std::string> labels;
  uint64_t samples = 0;
  double whole_share = 0;  // share of samples whose stack reached a root
  std::map<std::string, uint64_t> stop_reasons;
};

std::string IndexLine(const IndexEntry& e);  // one line, no newline
// Outside input (the file may be damaged or edited): a one-line error for anything that is
// not an entry, never a crash.
Result<IndexEntry> ParseIndexLine(std::string_view line);

// Reads DIR/index.jsonl; damaged lines are skipped and counted in *bad (may be null).
std::vector<IndexEntry> ReadIndex(const std::string& dir, size_t* bad);
Status AppendIndex(const std::string& dir, const IndexEntry& e);
// Rewrites the index (temporary file, then rename) with ENTRIES.
Status WriteIndex(const std::string& dir, const std::vector<IndexEntry>& entries);

}  // namespace sb::agent
