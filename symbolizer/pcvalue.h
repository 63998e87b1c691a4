// Decoding of the Go pclntab's pc-value tables (pcsp, pcfile, pcln, pcdata): a sequence of
// (zigzag varint value delta, varint pc delta) pairs, pc deltas scaled by the pc quantum,
// terminated by a zero value delta after the first pair (runtime/symtab.go: step).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace sb::sym {

// Reads an unsigned LEB128 varint limited to 32 bits, as the runtime's readvarint does.
// Returns false at end of input or on an over-long encoding.
inline bool ReadVarint32(std::string_view data, size_t* pos, uint32_t* out) {
  uint32_t v = 0;
  for (unsigned shift = 0; shift < 35; shift += 7) {
    if (*pos >= data.size()) return false;
    uint8_t b = static_cast<uint8_t>(data[(*pos)++]);
    v |= static_cast<uint32_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *out = v;
      return true;
    }
  }
  return false;
}

// Iterates over one table: each Next() yields the value valid in [run_start, pc).
class PcValueIter {
 public:
  PcValueIter(std::string_view table, uint64_t entry, uint8_t quantum)
      : data_(table), pc_(entry), quantum_(quantum) {}

  // Advances to the next run. false at the end of the table or on corrupt input.
  bool Next() {
    // A corrupt table could otherwise make us spin through huge pc ranges; real functions
    // have far fewer runs than this.
    if (++steps_ > kMaxSteps) return false;
    uint32_t uv, pcd;
    if (!ReadVarint32(data_, &pos_, &uv)) return false;
    if (uv == 0 && !first_) return false;
    first_ = false;
    int32_t vdelta = (uv & 1) ? static_cast<int32_t>(~(uv >> 1)) : static_cast<int32_t>(uv >> 1);
    if (!ReadVarint32(data_, &pos_, &pcd)) return false;
    run_start_ = pc_;
    pc_ += static_cast<uint64_t>(pcd) * quantum_;
    // Wrapping add: values come from untrusted input.
    value_ = static_cast<int32_t>(static_cast<uint32_t>(value_) + static_cast<uint32_t>(vdelta));
    return true;
  }
  uint64_t run_start() const { return run_start_; }
  uint64_t run_end() const { return pc_; }  // exclusive
  int32_t value() const { return value_; }

 private:
  static constexpr int kMaxSteps = 1 << 20;
  std::string_view data_;
  size_t pos_ = 0;
  uint64_t pc_;
  uint64_t run_start_ = 0;
  uint8_t quantum_;
  int32_t value_ = -1;
  bool first_ = true;
  int steps_ = 0;
};

// The table's value at target (the runtime's pcvalue), or nullopt if target is not covered.
inline std::optional<int32_t> PcValueAt(std::string_view table, uint64_t entry, uint8_t quantum,
                                        uint64_t target) {
  PcValueIter it(table, entry, quantum);
  while (it.Next()) {
    if (target < it.run_end()) {
      if (target < it.run_start()) return std::nullopt;
      return it.value();
    }
  }
  return std::nullopt;
}

}  // namespace sb::sym
