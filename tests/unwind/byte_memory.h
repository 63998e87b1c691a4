// Synthetic process memory for the unwind core's unit tests: bytes at addresses, everything
// else unreadable (a read touching an absent byte fails, as an unmapped page would).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>

#include "ebpf/unwind/host_unwind.h"

namespace sb::unwind {

class ByteMemory : public MemoryView {
 public:
  void Put64(uint64_t addr, uint64_t v) {
    for (int i = 0; i < 8; i++) bytes_[addr + i] = static_cast<uint8_t>(v >> (8 * i));
  }
  void Put32(uint64_t addr, uint32_t v) {
    for (int i = 0; i < 4; i++) bytes_[addr + i] = static_cast<uint8_t>(v >> (8 * i));
  }
  void PutBytes(uint64_t addr, std::initializer_list<uint8_t> b) {
    for (uint8_t v : b) bytes_[addr++] = v;
  }
  void PutBytes(uint64_t addr, const std::string& s) {
    for (size_t i = 0; i < s.size(); i++) bytes_[addr + i] = static_cast<uint8_t>(s[i]);
  }
  // Zero bytes wherever [addr, addr + n) has none yet (a runtime struct read whole).
  void FillAbsent(uint64_t addr, size_t n) {
    for (size_t i = 0; i < n; i++) bytes_.emplace(addr + i, 0);
  }
  bool Read(uint64_t addr, void* dst, size_t n) const override {
    reads++;
    auto* out = static_cast<uint8_t*>(dst);
    for (size_t i = 0; i < n; i++) {
      auto it = bytes_.find(addr + i);
      if (it == bytes_.end()) return false;
      out[i] = it->second;
    }
    return true;
  }
  mutable int reads = 0;  // Read calls: one per sb_read of the core

 private:
  std::map<uint64_t, uint8_t> bytes_;
};

}  // namespace sb::unwind
