#include "unwinder/pcsp_table_space.h"

#include <algorithm>

namespace sb::unwinder {

PcspTableSpace::PcspTableSpace(uint32_t capacity, Clock::duration reuse_after)
    : capacity_(capacity), reuse_after_(reuse_after) {
  if (capacity_ > 0) free_[0] = capacity_;
}

void PcspTableSpace::AddFree(uint32_t first, uint32_t cells) {
  if (cells == 0) return;
  auto next = free_.lower_bound(first);
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == first) {  // joins the run before it
      first = prev->first;
      cells += prev->second;
      free_.erase(prev);
    }
  }
  if (next != free_.end() && first + cells == next->first) {  // and the one after it
    cells += next->second;
    free_.erase(next);
  }
  free_[first] = cells;
}

void PcspTableSpace::ReclaimOld(Clock::time_point now) {
  auto old = std::stable_partition(pending_.begin(), pending_.end(),
                                   [&](const Freed& f) { return now - f.at < reuse_after_; });
  for (auto it = old; it != pending_.end(); ++it) AddFree(it->first, it->cells);
  pending_.erase(old, pending_.end());
}

Result<PcspTableSpace::Table> PcspTableSpace::Acquire(const std::string& key, uint32_t cells,
                                                      Clock::time_point now) {
  if (auto it = tables_.find(key); it != tables_.end()) {
    it->second.refs++;
    return Table{it->second.first, it->second.id, false};
  }
  ReclaimOld(now);
  // First fit: tables are placed and freed whole, so runs stay few.
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < cells) continue;
    uint32_t first = it->first, left = it->second - cells;
    free_.erase(it);
    if (left > 0) free_[first + cells] = left;
    uint32_t id = next_id_++;
    if (next_id_ == 0) next_id_ = 1;  // 0 means "no table" to the cache
    tables_[key] = Placed{first, cells, id, 1};
    used_ += cells;
    return Table{first, id, true};
  }
  uint32_t pending = 0;
  for (const auto& f : pending_) pending += f.cells;
  return MakeError("pcsp table full: " + std::to_string(cells) + " cells needed, " +
                   std::to_string(capacity_ - used_ - pending) + " free of " + std::to_string(capacity_) +
                   (pending ? " (" + std::to_string(pending) + " freed less than a second ago)" : "") + " in " +
                   std::to_string(tables_.size()) + " binaries' tables");
}

void PcspTableSpace::Release(const std::string& key, Clock::time_point now) {
  auto it = tables_.find(key);
  if (it == tables_.end()) return;
  if (--it->second.refs > 0) return;
  pending_.push_back(Freed{it->second.first, it->second.cells, now});
  used_ -= it->second.cells;
  tables_.erase(it);
}

}  // namespace sb::unwinder
