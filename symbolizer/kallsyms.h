// Kernel symbols from /proc/kallsyms, for the kernel frames of samples (`--kernel`). The file
// lists "ADDRESS TYPE NAME [MODULE]" per line; only code symbols (types t, T, w, W) are kept,
// sorted by address, and a kernel pc resolves to the symbol at or below it. With
// kernel.kptr_restrict (or without CAP_SYSLOG) every address reads as zero: that is an error
// that says so, and the caller goes on without kernel frames.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace sb::sym {

struct KernelSymbol {
  uint64_t address = 0;
  std::string_view name;    // e.g. "vfs_write"
  std::string_view module;  // "" for the kernel image itself, else e.g. "ext4"
};

class KernelSymbols {
 public:
  // Parses the text of /proc/kallsyms. Malformed lines are skipped; no code symbol at all, or
  // only zero addresses, is an error naming the reason.
  static Result<KernelSymbols> Parse(std::string_view text);
  static Result<KernelSymbols> Load(const std::string& path = "/proc/kallsyms");

  // The symbol containing PC (the last one at or below it), or nothing when PC is below the
  // first symbol or beyond the end of the last one's region (`limit()`).
  std::optional<KernelSymbol> Find(uint64_t pc) const;
  size_t size() const { return entries_.size(); }
  uint64_t start() const { return entries_.empty() ? 0 : entries_.front().address; }
  // One past the highest address Find resolves (the last symbol gets at most a page).
  uint64_t limit() const { return limit_; }

 private:
  struct Entry {
    uint64_t address;
    uint32_t name_off;
    uint16_t name_len;
    uint16_t module;  // index into modules_; 0: the kernel image
  };
  std::string names_;                 // every kept name, back to back
  std::vector<std::string> modules_;  // modules_[0] == ""
  std::vector<Entry> entries_;        // sorted by address
  uint64_t limit_ = 0;
};

}  // namespace sb::sym
