// Helpers shared by the symbolizer tests: running commands, building the Go test program in
// several link modes (once per test process), and fetching the real lefthook binaries.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tests/common/shell_util.h"

namespace sb::sym::test {

using sb::test::CommandResult;
using sb::test::Quote;
using sb::test::RunCommand;

// A fresh directory under the build tree (or /tmp), removed by nobody: tests leave it for
// post-mortem inspection; the build dir is disposable.
std::string MakeTempDir(const std::string& tag);

// Environment prefix for go commands: private GOCACHE, no modules, no network.
std::string GoEnv();

// The symtest program (tests/symbolizer/testdata/symtest) built with Go 1.19 in four modes.
struct GoPrograms {
  std::string plain;         // go build
  std::string stripped;      // -ldflags='-s -w'
  std::string pie;           // -buildmode=pie
  std::string pie_stripped;  // -buildmode=pie -ldflags='-s -w'
  std::string error;         // non-empty when the build failed
};
const GoPrograms& BuildGoPrograms();

// symtest for arm64 linked by GNU ld (cgo's external linking, aarch64-linux-gnu-gcc): ld puts
// .rodata and .gopclntab in the text's executable segment there. "" with *error when the cross
// compiler is missing or the build failed. Runs under RunArm64Prefix() (qemu-aarch64).
std::string BuildArm64ExternalSymtest(std::string* error);
std::string RunArm64Prefix();

// One TEXT symbol from `go tool objdump`, with its instructions' pcs and file:line.
struct ObjdumpFunc {
  std::string name;
  uint64_t entry = 0;
  std::vector<std::pair<uint64_t, std::string>> insns;  // (pc, "file:line")
  std::vector<std::string> asm_text;                      // one per insn
};
std::vector<ObjdumpFunc> Objdump(const std::string& binary);

// `go tool addr2line`: for each pc, (function, "file:line").
std::vector<std::pair<std::string, std::string>> Addr2Line(const std::string& binary,
                                                           const std::vector<uint64_t>& pcs);

// Directory holding lefthook-linux-x64 and lefthook-linux-arm64 (tools/fetch-lefthook.sh);
// "" with a message in *error when they could not be fetched.
std::string LefthookDir(std::string* error);

// A minimal ELF64 little-endian image for malformed-input and no-section tests: the header,
// one program header per segment, then each segment's bytes at a 16-aligned file offset.
struct MiniSegment {
  uint32_t type;
  uint32_t flags;
  uint64_t vaddr;
  std::string data;
};
std::string MakeMiniElf(uint16_t e_type, const std::vector<MiniSegment>& segments);

}  // namespace sb::sym::test
