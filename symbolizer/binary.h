// Binary: everything the symbolizer knows about one file (executable, library or vDSO image),
// loaded once and shared. BinaryCache: one Binary per (device, inode, size, mtime), whatever
// the path it is reached by, so every process running the same executable shares its tables;
// bounded in bytes, least recently used first out.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/result.h"
#include "symbolizer/elf_file.h"
#include "symbolizer/go_buildinfo.h"
#include "symbolizer/go_pclntab.h"

namespace sb::sym {

class Binary {
 public:
  static Result<std::shared_ptr<Binary>> Load(const std::string& path);
  static Result<std::shared_ptr<Binary>> FromElf(std::shared_ptr<const ElfFile> elf);

  const ElfFile& elf() const { return *elf_; }
  std::shared_ptr<const ElfFile> elf_ptr() const { return elf_; }
  const GoPclntab* go() const { return go_.get(); }  // null for non-Go files
  const GoBuildInfo* build_info() const { return build_info_ ? &*build_info_ : nullptr; }
  std::string build_id() const;  // GNU build id, else Go build id, else ""
  // False once the file was rewritten in place after it was loaded (its build id in the mapped
  // bytes is another): the mapping shows the new contents, and its tables are not this
  // binary's any more. A file replaced by a rename keeps the old contents mapped, and intact.
  bool Intact() const;

  // Frames for a link-time virtual address, innermost first. Go code through the pclntab;
  // other code through ELF symbols ("name" with file "" and line 0). Unknown: empty.
  std::vector<SourceFrame> Symbolize(uint64_t vaddr) const;
  // The ELF symbol containing vaddr (functions only).
  const ElfSymbol* FindSymbol(uint64_t vaddr) const;

 private:
  std::shared_ptr<const ElfFile> elf_;
  std::shared_ptr<GoPclntab> go_;
  std::optional<GoBuildInfo> build_info_;
  std::vector<ElfSymbol> funcs_;  // sorted by value, STT_FUNC with size > 0 (or next symbol)
  std::string loaded_build_id_;
};

struct BinaryCacheStats {
  uint64_t bytes = 0;      // mapped file bytes of the binaries cached now
  uint64_t entries = 0;
  uint64_t max_bytes = 0;  // the bound (0: none)
  uint64_t hits = 0;
  uint64_t misses = 0;     // loads
  uint64_t evictions = 0;  // dropped to stay within max_bytes
};

class BinaryCache {
 public:
  // max_bytes bounds the sum of the cached binaries' mapped file sizes (ELF bytes: what a
  // binary pins in memory; its parsed tables are small next to it); 0: no bound. Past it, the
  // least recently used binaries no one else holds are dropped (a holder of a shared_ptr, such
  // as a followed process, keeps its binary cached and counted, so the bound is exceeded only
  // by binaries in use).
  explicit BinaryCache(uint64_t max_bytes = 0) : max_bytes_(max_bytes) {}
  void set_max_bytes(uint64_t max_bytes);
  // Evicts down to the bound now (Get does on every load): after users let binaries go, such
  // as when exited processes are forgotten.
  void Trim();
  // Loads PATH (or returns the cached one). Identity is device, inode, size and mtime, so a
  // binary replaced on disk is loaded anew and /proc/PID/exe of many processes running one
  // file is loaded once.
  Result<std::shared_ptr<Binary>> Get(const std::string& path);
  // Drops B from the cache (users holding it keep it): for files looked at once and not
  // wanted, such as every non-Go executable `record --all` checks, so they are unmapped.
  void Forget(const Binary* b);
  // The kernel's vDSO image as mapped in this process (same kernel => same image as every
  // process on the host).
  Result<std::shared_ptr<Binary>> Vdso();
  BinaryCacheStats Stats() const;

 private:
  struct Entry {
    std::shared_ptr<Binary> binary;
    uint64_t bytes = 0;
    std::list<std::string>::iterator lru;  // its key's place in lru_
  };
  void EvictLocked();  // needs mu_

  mutable std::mutex mu_;
  std::map<std::string, Entry> by_key_;
  std::list<std::string> lru_;  // keys, most recently used first
  uint64_t bytes_ = 0;
  uint64_t max_bytes_ = 0;
  uint64_t hits_ = 0, misses_ = 0, evictions_ = 0;
  std::shared_ptr<Binary> vdso_;
};

}  // namespace sb::sym
