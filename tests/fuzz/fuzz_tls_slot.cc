// Fuzz target: the amd64 decoder's caller that finds g's TLS slot (unwinder/tls_slot.cc,
// Zydis). The input is the code of a runtime function; it is wrapped in a one-segment ELF so
// the RIP-relative GOT reads the decoder follows land in the input too. An input that is
// itself a Go ELF file also goes through FindTlsSlot whole (pclntab lookup, then decoding),
// and through FindGogoWindow (unwinder/gogo_window.cc: gogo's windows, the same decoder),
// FindSystemstackWindow and FindAsmcgocallWindow (their windows), DecodeMcallCallees (each
// mcall site's funcval, read from the input's data) and NewstackMorebufFromCode
// (unwinder/newstack_morebuf.cc: newstack's dataflow, both arches). The raw input is also
// runtime.clone's code for FindCloneChildInCode on both architectures.
#include <elf.h>

#include <cstring>
#include <string>

#include "symbolizer/binary.h"
#include "tests/fuzz/fuzz_targets.h"
#include "unwinder/call_sites.h"
#include "unwinder/clone_child.h"
#include "unwinder/gogo_window.h"
#include "unwinder/mcall_callees.h"
#include "unwinder/systemstack_window.h"
#include "unwinder/go_offsets_table.h"
#include "unwinder/newstack_morebuf.h"
#include "unwinder/tls_slot.h"

namespace sb::fuzz {
namespace {

constexpr uint64_t kLoadAddress = 0x400000;

// ELF header, one PT_LOAD mapping the whole file at kLoadAddress, then DATA.
std::string WrapInElf(const uint8_t* data, size_t size) {
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_EXEC;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = 1;
  Elf64_Phdr ph{};
  ph.p_type = PT_LOAD;
  ph.p_flags = PF_R | PF_X;
  ph.p_vaddr = ph.p_paddr = kLoadAddress;
  ph.p_filesz = ph.p_memsz = sizeof(eh) + sizeof(ph) + size;
  ph.p_align = 0x1000;
  std::string out(reinterpret_cast<const char*>(&eh), sizeof(eh));
  out.append(reinterpret_cast<const char*>(&ph), sizeof(ph));
  out.append(reinterpret_cast<const char*>(data), size);
  return out;
}

}  // namespace

int FuzzTlsSlot(const uint8_t* data, size_t size) {
  std::string_view code(reinterpret_cast<const char*>(data), size);
  (void)unwinder::FindCloneChildInCode(sym::Arch::kAmd64, kLoadAddress, code);
  (void)unwinder::FindCloneChildInCode(sym::Arch::kArm64, kLoadAddress, code);
  auto wrapped = sym::ElfFile::FromBytes(WrapInElf(data, size), "fuzz");
  if (wrapped.ok()) {
    constexpr size_t kHeaders = sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr);
    (void)unwinder::FsDisplacementOfG(**wrapped, data, size, kLoadAddress + kHeaders);
  }
  auto elf = sym::ElfFile::FromBytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!elf.ok()) return 0;
  auto bin = sym::Binary::FromElf(*elf);
  if (bin.ok()) {
    (void)unwinder::FindTlsSlot(**bin);
    (void)unwinder::FindGogoWindow(**bin);
    (void)unwinder::FindSystemstackWindow(**bin);
    (void)unwinder::FindAsmcgocallWindow(**bin);
    if (const auto* go = (*bin)->go()) {
      if (auto mcall = go->FindFuncByName("runtime.mcall"))
        (void)unwinder::DecodeMcallCallees(**bin, unwinder::ReturnSitesOfCallsTo(**bin, mcall->entry));
    }
    for (int minor : {19, 27})
      if (auto off = unwinder::GoOffsetsForVersion(1, minor)) {
        auto r = unwinder::NewstackMorebufFromCode(**bin, *off);
        if (r.found && (r.lo >= r.hi || r.calls == 0)) __builtin_trap();
      }
  }
  return 0;
}

}  // namespace sb::fuzz

#ifdef SB_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return sb::fuzz::FuzzTlsSlot(data, size);
}
#endif
