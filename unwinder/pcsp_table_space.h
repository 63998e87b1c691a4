// Where each binary's pcsp table (GoBinaryFacts::pcsp.cells) lives in the sampler's sp_deltas
// array: one table per binary, shared by its processes (counted), its space given back when the
// last of them is untracked, and reused once no sample can still be reading it. Without this an
// agent running for weeks filled the array with the tables of binaries long gone (every deploy
// brings new build ids) and then could track no new process ("pcsp table full").
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/result.h"

namespace sb::unwinder {

class PcspTableSpace {
 public:
  using Clock = std::chrono::steady_clock;
  // capacity: cells in the array. reuse_after: how long freed space waits before it is handed
  // out again (a sample that looked up the old process's facts just before it was untracked
  // finishes in microseconds; a second is far beyond that).
  explicit PcspTableSpace(uint32_t capacity, Clock::duration reuse_after = std::chrono::seconds(1));

  struct Table {
    uint32_t first = 0;  // sb_proc_info.delta_first
    uint32_t id = 0;     // sb_proc_info.delta_table: unique for every placement, never 0
    bool fresh = false;  // just placed: the caller must write its cells
  };
  // One more process of `key` (a binary): its table, placed (cells long) if it has none yet.
  // Fails when no free run of that many cells is left.
  Result<Table> Acquire(const std::string& key, uint32_t cells, Clock::time_point now);
  // One process of `key` less; the last one frees the table's space.
  void Release(const std::string& key, Clock::time_point now);

  uint32_t used() const { return used_; }  // cells held by tables
  size_t tables() const { return tables_.size(); }
  uint32_t capacity() const { return capacity_; }

 private:
  struct Placed {
    uint32_t first, cells, id, refs;
  };
  struct Freed {
    uint32_t first, cells;
    Clock::time_point at;
  };
  void ReclaimOld(Clock::time_point now);
  void AddFree(uint32_t first, uint32_t cells);  // coalesces with its neighbours

  uint32_t capacity_;
  Clock::duration reuse_after_;
  uint32_t used_ = 0;
  uint32_t next_id_ = 1;
  std::map<std::string, Placed> tables_;
  std::map<uint32_t, uint32_t> free_;  // first -> cells, disjoint, never adjacent
  std::vector<Freed> pending_;         // freed, not yet reusable
};

}  // namespace sb::unwinder
