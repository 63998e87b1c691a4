// ByteView: overflow-safe, bounds-checked little-endian reads from a byte range. Every parser
// in the symbolizer reads outside input only through this, so a bad offset becomes an empty
// optional instead of an out-of-bounds access.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace sb::sym {

class ByteView {
 public:
  ByteView() = default;
  explicit ByteView(std::string_view data) : data_(data) {}

  size_t size() const { return data_.size(); }
  std::string_view data() const { return data_; }

  // [off, off+len) if it lies inside the view (no wrap-around).
  std::optional<std::string_view> Sub(uint64_t off, uint64_t len) const {
    if (off > data_.size() || len > data_.size() - off) return std::nullopt;
    return data_.substr(static_cast<size_t>(off), static_cast<size_t>(len));
  }
  std::optional<uint8_t> U8(uint64_t off) const { return Read<uint8_t>(off); }
  std::optional<uint16_t> U16(uint64_t off) const { return Read<uint16_t>(off); }
  std::optional<uint32_t> U32(uint64_t off) const { return Read<uint32_t>(off); }
  std::optional<uint64_t> U64(uint64_t off) const { return Read<uint64_t>(off); }
  // A pointer-sized word (4 or 8 bytes).
  std::optional<uint64_t> Word(uint64_t off, int ptr_size) const {
    if (ptr_size == 4) {
      auto v = U32(off);
      if (!v) return std::nullopt;
      return *v;
    }
    return U64(off);
  }

 private:
  template <typename T>
  std::optional<T> Read(uint64_t off) const {
    auto s = Sub(off, sizeof(T));
    if (!s) return std::nullopt;
    T v;
    std::memcpy(&v, s->data(), sizeof(T));  // little-endian host (amd64/arm64) assumed
    return v;
  }
  std::string_view data_;
};

// NUL-terminated string at off inside data; "" when off is out of range. A string running off
// the end is cut at the end.
inline std::string_view CString(std::string_view data, uint64_t off) {
  if (off >= data.size()) return {};
  std::string_view rest = data.substr(static_cast<size_t>(off));
  size_t n = rest.find('\0');
  return n == std::string_view::npos ? rest : rest.substr(0, n);
}

inline uint64_t AlignUp(uint64_t v, uint64_t a) {
  if (a == 0) return v;
  uint64_t r = v % a;
  return r == 0 ? v : (v > UINT64_MAX - (a - r) ? UINT64_MAX : v + (a - r));
}

inline std::string Hex(uint64_t v) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), kDigits[v & 15]);
    v >>= 4;
  } while (v != 0);
  return s;
}

}  // namespace sb::sym
