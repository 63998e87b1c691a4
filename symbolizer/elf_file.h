// ElfFile: a bounds-checked view of an ELF64 file (executable, shared library, vDSO image or
// core). Every accessor validates offsets against the file size: malformed input yields an
// error or an empty result, never an out-of-bounds read.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace sb::sym {

enum class Arch { kUnknown, kAmd64, kArm64 };
const char* ArchName(Arch arch);

struct ElfSection {
  std::string name;
  uint32_t type = 0;
  uint64_t flags = 0;
  uint64_t addr = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

struct ElfSegment {
  uint32_t type = 0;   // PT_LOAD, PT_NOTE, PT_TLS, ...
  uint32_t flags = 0;  // PF_X | PF_W | PF_R
  uint64_t offset = 0;
  uint64_t vaddr = 0;
  uint64_t filesz = 0;
  uint64_t memsz = 0;
  uint64_t align = 0;
};

struct ElfSymbol {
  std::string name;
  uint64_t value = 0;
  uint64_t size = 0;
  uint8_t type = 0;  // STT_FUNC, STT_OBJECT, STT_TLS, ...
};

struct ElfNote {
  std::string name;  // "GNU", "CORE", "Go", "LINUX"
  uint32_t type = 0;
  std::string_view desc;
};

class ElfFile {
 public:
  // Maps the file read-only. Errors name the path.
  static Result<std::shared_ptr<ElfFile>> Open(const std::string& path);
  // Takes ownership of bytes already in memory (vDSO image, fuzz input, tests).
  static Result<std::shared_ptr<ElfFile>> FromBytes(std::string bytes, std::string name);

  ~ElfFile();
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;

  const std::string& name() const { return name_; }
  Arch arch() const { return arch_; }
  uint16_t type() const { return type_; }  // ET_EXEC, ET_DYN, ET_CORE
  uint64_t entry() const { return entry_; }
  std::string_view bytes() const { return std::string_view(data_, size_); }

  const std::vector<ElfSection>& sections() const { return sections_; }
  const std::vector<ElfSegment>& segments() const { return segments_; }
  const ElfSection* FindSection(std::string_view name) const;
  // Raw bytes of a section (empty for SHT_NOBITS or out-of-file ranges).
  std::string_view SectionData(const ElfSection& s) const;
  // Bytes of a section, decompressed when SHF_COMPRESSED (zlib), e.g. Go's .debug_* sections.
  Result<std::string> SectionContents(const ElfSection& s) const;

  // Notes from PT_NOTE segments and SHT_NOTE sections (deduplicated).
  std::vector<ElfNote> Notes() const;
  std::string BuildId() const;    // hex of NT_GNU_BUILD_ID, "" if none
  std::string GoBuildId() const;  // the Go build id note (".note.go.buildid"), "" if none

  // Bytes at a virtual address, through the PT_LOAD segments' file-backed part.
  Result<std::string_view> ReadVaddr(uint64_t vaddr, size_t len) const;
  std::optional<uint64_t> VaddrToFileOffset(uint64_t vaddr) const;
  std::optional<uint64_t> FileOffsetToVaddr(uint64_t offset) const;

  // .symtab then .dynsym entries (all types), names resolved. Empty when stripped.
  std::vector<ElfSymbol> Symbols() const;

 private:
  ElfFile() = default;
  Status Parse();

  std::string name_;
  std::string owned_;           // used when constructed FromBytes
  void* map_ = nullptr;         // used when mmapped
  size_t map_size_ = 0;
  const char* data_ = nullptr;
  size_t size_ = 0;
  Arch arch_ = Arch::kUnknown;
  uint16_t type_ = 0;
  uint64_t entry_ = 0;
  std::vector<ElfSection> sections_;
  std::vector<uint32_t> section_links_;  // sh_link of each section (symbol -> string table)
  std::vector<ElfSegment> segments_;
};

}  // namespace sb::sym
