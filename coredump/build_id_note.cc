#include "coredump/build_id_note.h"

#include <elf.h>

#include <cstring>

#include "base/hex.h"

namespace sb::coredump {
namespace {

constexpr uint32_t kNtGoBuildId = 4;

bool Fits(uint64_t off, uint64_t len, uint64_t size) { return off <= size && len <= size - off; }

std::string HexBytes(std::string_view b) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : b) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

void ReadNotes(std::string_view block, uint64_t align, BuildIds* ids) {
  const uint64_t a = align == 8 ? 8 : 4;
  auto up = [a](uint64_t v) { return (v + a - 1) & ~(a - 1); };
  uint64_t pos = 0;
  while (Fits(pos, 12, block.size())) {
    uint32_t namesz, descsz, type;
    std::memcpy(&namesz, block.data() + pos, 4);
    std::memcpy(&descsz, block.data() + pos + 4, 4);
    std::memcpy(&type, block.data() + pos + 8, 4);
    uint64_t name_off = pos + 12;
    if (!Fits(name_off, namesz, block.size())) return;
    uint64_t desc_off = up(name_off + namesz);
    if (!Fits(desc_off, descsz, block.size())) return;
    std::string_view name = block.substr(name_off, namesz);
    while (!name.empty() && name.back() == '\0') name.remove_suffix(1);
    std::string_view desc = block.substr(desc_off, descsz);
    if (name == "GNU" && type == NT_GNU_BUILD_ID && ids->gnu.empty()) ids->gnu = HexBytes(desc);
    if (name == "Go" && type == kNtGoBuildId && ids->go.empty()) {
      std::string_view d = desc;
      while (!d.empty() && d.back() == '\0') d.remove_suffix(1);
      ids->go = std::string(d);
    }
    pos = up(desc_off + descsz);
  }
}

}  // namespace

Result<BuildIds> BuildIdsFromHeaderPage(std::string_view page) {
  if (page.size() < sizeof(Elf64_Ehdr) || std::memcmp(page.data(), ELFMAG, SELFMAG) != 0)
    return MakeError("no ELF header at the start of the executable's mapping");
  if (static_cast<uint8_t>(page[EI_CLASS]) != ELFCLASS64 || static_cast<uint8_t>(page[EI_DATA]) != ELFDATA2LSB)
    return MakeError("the executable's ELF header is not 64-bit little-endian");
  Elf64_Ehdr eh;
  std::memcpy(&eh, page.data(), sizeof(eh));
  BuildIds ids;
  if (eh.e_phentsize < sizeof(Elf64_Phdr)) return ids;
  for (uint64_t i = 0; i < eh.e_phnum; i++) {
    uint64_t off = eh.e_phoff + i * eh.e_phentsize;
    if (off < eh.e_phoff || !Fits(off, sizeof(Elf64_Phdr), page.size())) break;
    Elf64_Phdr ph;
    std::memcpy(&ph, page.data() + off, sizeof(ph));
    if (ph.p_type != PT_NOTE || !Fits(ph.p_offset, ph.p_filesz, page.size())) continue;
    ReadNotes(page.substr(ph.p_offset, ph.p_filesz), ph.p_align, &ids);
  }
  return ids;
}

std::string CompareBuildIds(const BuildIds& core, const BuildIds& binary) {
  if (core.empty() || binary.empty()) return "";
  if (!core.gnu.empty() && !binary.gnu.empty() && core.gnu != binary.gnu)
    return "the core's executable has GNU build id " + core.gnu + ", the binary " + binary.gnu;
  if (!core.go.empty() && !binary.go.empty() && core.go != binary.go)
    return "the core's executable has Go build id " + core.go + ", the binary " + binary.go;
  bool common = (!core.gnu.empty() && !binary.gnu.empty()) || (!core.go.empty() && !binary.go.empty());
  if (!common)
    return "the core's executable has " + (core.go.empty() ? "GNU build id " + core.gnu : "Go build id " + core.go) +
           ", the binary only a " + (binary.go.empty() ? "GNU build id " + binary.gnu : "Go build id " + binary.go);
  return "";
}

}  // namespace sb::coredump
