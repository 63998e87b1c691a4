// Probe sites inside one function's machine code: its RET instructions, and the instruction
// that should carry the entry probe. Per architecture: Zydis on amd64, a fixed-width decoder
// on arm64. Pure functions of the bytes, so they are unit-tested on built binaries.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "symbolizer/elf_file.h"

namespace sb::exitprobe {

// Where the entry probe goes.
enum class EntryPlacement {
  kAuto,              // the first instruction the kernel emulates before SP changes, else the first
  kFirstInstruction,  // always the function's first instruction
};

struct CodeSite {
  uint64_t vaddr = 0;     // link-time address
  bool emulated = false;  // the kernel emulates it (cheap trap) rather than single-steps it
  std::string text;       // disassembly, for --verbose
};

struct CodeSites {
  CodeSite first;               // the function's first instruction
  CodeSite entry;               // where the entry probe goes
  std::string entry_how;        // "first instruction", "stack-check branch", ...
  std::vector<CodeSite> rets;   // every RET (RETAA/RETAB on arm64)
  bool decode_error = false;    // stopped at bytes that are not an instruction
  // Go's stack check reads the bound through the g register (amd64 `CMP ..., [R14+16]`,
  // arm64 `LDR Rt, [R28, #16]`): that register holds g everywhere in the function.
  bool g_stack_check = false;
};

// Decodes [vaddr, vaddr + code.size()). Instruction sets: amd64 and arm64.
CodeSites FindCodeSitesAmd64(std::string_view code, uint64_t vaddr, EntryPlacement placement);
CodeSites FindCodeSitesArm64(std::string_view code, uint64_t vaddr, EntryPlacement placement);
CodeSites FindCodeSites(sym::Arch arch, std::string_view code, uint64_t vaddr, EntryPlacement placement);

}  // namespace sb::exitprobe
