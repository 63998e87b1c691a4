// GoPclntab: the Go runtime's function table (.gopclntab), for every format Go 1.16 to 1.27
// writes (magic 0xfffffffa, 0xfffffff0, 0xfffffff1). Works on binaries with no symbol table
// and no DWARF. Gives function bounds, names, flags, file/line with inline expansion (the way
// runtime/pprof expands it), and the SP delta (pcsp) used by the unwinder for frameless frames.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "symbolizer/elf_file.h"

namespace sb::sym {

enum class PclntabFormat { kGo116, kGo118, kGo120 };

// Runtime func flags (runtime/symtab.go abi.FuncFlag).
constexpr uint8_t kFuncFlagTopFrame = 1;
constexpr uint8_t kFuncFlagSpWrite = 2;

struct GoFunc {
  uint64_t entry = 0;  // link-time virtual address
  uint64_t end = 0;    // next function's entry (or the table's end pc)
  std::string_view name;
  uint8_t func_id = 0;
  uint8_t flag = 0;
  uint32_t index = 0;  // position in the function table
};

struct SourceFrame {
  std::string function;
  std::string file;
  int64_t line = 0;
  bool inlined = false;  // true for frames expanded from the inline tree
  // A compiler-generated wrapper (go-statement and method-value wrappers, eq/hash functions):
  // Go's tracebacks, and so runtime/pprof, leave these out unless they called a panic.
  bool wrapper = false;
};

struct SpDeltaRun {
  uint64_t pc;    // first pc of the run (link-time address)
  int32_t delta;  // SP offset from the function's entry SP (bytes), pcsp value
};

class GoPclntab {
 public:
  // Finds .gopclntab (section or, failing that, by magic in a read-only PT_LOAD), and the
  // moduledata (for text start and go:func.* base) where the format needs it.
  static Result<std::shared_ptr<GoPclntab>> Parse(std::shared_ptr<const ElfFile> elf);

  PclntabFormat format() const { return format_; }
  uint8_t pc_quantum() const { return pc_quantum_; }
  uint8_t ptr_size() const { return ptr_size_; }
  uint64_t text_start() const { return text_start_; }
  uint64_t table_address() const { return table_addr_; }  // vaddr of the pclntab header
  size_t num_funcs() const { return nfunc_; }

  Result<GoFunc> FuncAt(size_t index) const;
  std::optional<GoFunc> FindFunc(uint64_t pc) const;  // binary search over the functab
  std::optional<GoFunc> FindFuncByName(std::string_view name) const;

  // Innermost frame first. Inlined calls expanded as runtime/pprof does: each inline tree
  // level yields a frame whose file/line come from the pc tables at that level's pc.
  // Empty when pc is not in any function.
  std::vector<SourceFrame> Symbolize(uint64_t pc) const;

  // pcsp value at pc (bytes the function has pushed/allocated below its entry SP).
  std::optional<int32_t> SpDelta(uint64_t pc) const;
  // Whole pcsp table of a function as runs (pc ascending; each run lasts until the next).
  Result<std::vector<SpDeltaRun>> SpDeltaRuns(const GoFunc& f) const;

  // True for the funcID of compiler-generated wrappers (FuncIDWrapper; see SourceFrame).
  bool IsWrapperId(uint8_t func_id) const;

  // pclntab-reported file/line for pc without inline expansion (the physical function).
  std::optional<SourceFrame> FileLine(uint64_t pc) const;

 private:
  GoPclntab() = default;
  struct Impl;
  std::shared_ptr<const ElfFile> elf_;
  std::shared_ptr<Impl> impl_;
  PclntabFormat format_ = PclntabFormat::kGo120;
  uint8_t pc_quantum_ = 1;
  uint8_t ptr_size_ = 8;
  uint64_t text_start_ = 0;
  uint64_t table_addr_ = 0;
  size_t nfunc_ = 0;
  uint8_t wrapper_id_ = 0;  // 0: none known
};

}  // namespace sb::sym
