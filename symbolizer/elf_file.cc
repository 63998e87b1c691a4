// ElfFile: parsing of ELF64 little-endian files. Every read goes through ByteView (see
// byte_reader.h), which checks offset and length against the mapping, so a malformed or
// truncated file yields an error or an empty result rather than a wild read.
#include "symbolizer/elf_file.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include "symbolizer/byte_reader.h"

namespace sb::sym {
namespace {

// Upper bounds that keep hostile headers from making us allocate or loop without end.
constexpr uint64_t kMaxSections = 1 << 16;
constexpr uint64_t kMaxDecompressed = 1ull << 32;  // 4 GiB: far above any real debug section

}  // namespace

const char* ArchName(Arch arch) {
  switch (arch) {
    case Arch::kAmd64: return "amd64";
    case Arch::kArm64: return "arm64";
    default: return "unknown";
  }
}

ElfFile::~ElfFile() {
  if (map_ != nullptr) munmap(map_, map_size_);
}

Result<std::shared_ptr<ElfFile>> ElfFile::Open(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return MakeError(path + ": " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return MakeError(path + ": fstat: " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return MakeError(path + ": not a regular file");
  }
  std::shared_ptr<ElfFile> f(new ElfFile());
  f->name_ = path;
  if (st.st_size > 0) {
    void* m = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      int e = errno;
      close(fd);
      return MakeError(path + ": mmap: " + std::strerror(e));
    }
    f->map_ = m;
    f->map_size_ = static_cast<size_t>(st.st_size);
    f->data_ = static_cast<const char*>(m);
    f->size_ = f->map_size_;
  }
  close(fd);
  Status s = f->Parse();
  if (!s.ok()) return MakeError(path + ": " + s.error());
  return f;
}

Result<std::shared_ptr<ElfFile>> ElfFile::FromBytes(std::string bytes, std::string name) {
  std::shared_ptr<ElfFile> f(new ElfFile());
  f->name_ = std::move(name);
  f->owned_ = std::move(bytes);
  f->data_ = f->owned_.data();
  f->size_ = f->owned_.size();
  Status s = f->Parse();
  if (!s.ok()) return MakeError(f->name_ + ": " + s.error());
  return f;
}

Status ElfFile::Parse() {
  ByteView v(bytes());
  if (size_ < EI_NIDENT || std::memcmp(data_, ELFMAG, SELFMAG) != 0) {
    return MakeError("not an ELF file");
  }
  if (static_cast<uint8_t>(data_[EI_CLASS]) != ELFCLASS64) {
    return MakeError("unsupported ELF class (only ELF64 is supported)");
  }
  if (static_cast<uint8_t>(data_[EI_DATA]) != ELFDATA2LSB) {
    return MakeError("unsupported ELF byte order (only little-endian is supported)");
  }
  if (size_ < sizeof(Elf64_Ehdr)) return MakeError("truncated ELF header");
  Elf64_Ehdr eh;
  std::memcpy(&eh, data_, sizeof(eh));
  type_ = eh.e_type;
  entry_ = eh.e_entry;
  switch (eh.e_machine) {
    case EM_X86_64: arch_ = Arch::kAmd64; break;
    case EM_AARCH64: arch_ = Arch::kArm64; break;
    default: arch_ = Arch::kUnknown; break;
  }

  // Program headers. A core file or a stripped image still has these.
  if (eh.e_phoff != 0 && eh.e_phnum != 0) {
    if (eh.e_phentsize < sizeof(Elf64_Phdr)) return MakeError("bad e_phentsize");
    for (uint64_t i = 0; i < eh.e_phnum; i++) {
      auto raw = v.Sub(eh.e_phoff + i * eh.e_phentsize, sizeof(Elf64_Phdr));
      if (!raw) return MakeError("program header table out of file bounds");
      Elf64_Phdr ph;
      std::memcpy(&ph, raw->data(), sizeof(ph));
      segments_.push_back(ElfSegment{ph.p_type, ph.p_flags, ph.p_offset, ph.p_vaddr,
                                     ph.p_filesz, ph.p_memsz, ph.p_align});
    }
  }

  // Section headers are optional (cores, some stripped images): absent or broken tables are
  // tolerated only in the sense that a table we cannot read at all is an error, while a
  // zero e_shoff simply means "no sections".
  if (eh.e_shoff != 0) {
    uint64_t shnum = eh.e_shnum;
    if (eh.e_shentsize < sizeof(Elf64_Shdr)) return MakeError("bad e_shentsize");
    if (shnum == 0) {
      // Extended numbering: the real count sits in section 0's sh_size.
      auto raw0 = v.Sub(eh.e_shoff, sizeof(Elf64_Shdr));
      if (!raw0) return MakeError("section header table out of file bounds");
      Elf64_Shdr s0;
      std::memcpy(&s0, raw0->data(), sizeof(s0));
      shnum = s0.sh_size;
    }
    if (shnum > kMaxSections) return MakeError("too many section headers");
    std::vector<Elf64_Shdr> raw_sections;
    raw_sections.reserve(shnum);
    for (uint64_t i = 0; i < shnum; i++) {
      auto raw = v.Sub(eh.e_shoff + i * eh.e_shentsize, sizeof(Elf64_Shdr));
      if (!raw) return MakeError("section header table out of file bounds");
      Elf64_Shdr sh;
      std::memcpy(&sh, raw->data(), sizeof(sh));
      raw_sections.push_back(sh);
    }
    uint64_t shstrndx = eh.e_shstrndx;
    if (shstrndx == SHN_XINDEX && !raw_sections.empty()) shstrndx = raw_sections[0].sh_link;
    std::string_view shstr;
    if (shstrndx < raw_sections.size() && raw_sections[shstrndx].sh_type != SHT_NOBITS) {
      auto s = v.Sub(raw_sections[shstrndx].sh_offset, raw_sections[shstrndx].sh_size);
      if (s) shstr = *s;
    }
    for (const Elf64_Shdr& sh : raw_sections) {
      ElfSection sec;
      sec.name = std::string(CString(shstr, sh.sh_name));
      sec.type = sh.sh_type;
      sec.flags = sh.sh_flags;
      sec.addr = sh.sh_addr;
      sec.offset = sh.sh_offset;
      sec.size = sh.sh_size;
      sections_.push_back(std::move(sec));
      section_links_.push_back(sh.sh_link);
    }
  }
  return Status::Ok();
}

const ElfSection* ElfFile::FindSection(std::string_view name) const {
  for (const ElfSection& s : sections_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string_view ElfFile::SectionData(const ElfSection& s) const {
  if (s.type == SHT_NOBITS || s.type == SHT_NULL) return {};
  return ByteView(bytes()).Sub(s.offset, s.size).value_or(std::string_view());
}

Result<std::string> ElfFile::SectionContents(const ElfSection& s) const {
  if (s.type == SHT_NOBITS) return std::string();
  auto raw = ByteView(bytes()).Sub(s.offset, s.size);
  if (!raw) return MakeError("section " + s.name + " lies outside the file");
  if ((s.flags & SHF_COMPRESSED) == 0) return std::string(*raw);
  if (raw->size() < sizeof(Elf64_Chdr)) return MakeError("section " + s.name + ": short Chdr");
  Elf64_Chdr ch;
  std::memcpy(&ch, raw->data(), sizeof(ch));
  if (ch.ch_type != ELFCOMPRESS_ZLIB) {
    return MakeError("section " + s.name + ": unsupported compression type " +
                     std::to_string(ch.ch_type));
  }
  // zlib cannot expand data more than about 1032:1, so a larger claim is a lie that would
  // only make us allocate (up to 4 GiB) for nothing.
  if (ch.ch_size > kMaxDecompressed || ch.ch_size / 1024 > raw->size() + 64) {
    return MakeError("section " + s.name + ": implausible decompressed size");
  }
  std::string out(ch.ch_size, '\0');
  z_stream zs{};
  if (inflateInit(&zs) != Z_OK) return MakeError("zlib init failed");
  std::string_view in = raw->substr(sizeof(Elf64_Chdr));
  // zlib's avail_in/avail_out are 32-bit; feed in chunks so huge sections still work.
  size_t in_pos = 0, out_pos = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    if (zs.avail_in == 0 && in_pos < in.size()) {
      size_t n = std::min<size_t>(in.size() - in_pos, 1u << 30);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + in_pos));
      zs.avail_in = static_cast<uInt>(n);
      in_pos += n;
    }
    if (zs.avail_out == 0 && out_pos < out.size()) {
      size_t n = std::min<size_t>(out.size() - out_pos, 1u << 30);
      zs.next_out = reinterpret_cast<Bytef*>(out.data() + out_pos);
      zs.avail_out = static_cast<uInt>(n);
      out_pos += n;
    }
    if (zs.avail_out == 0) {
      // Output full: the stream must end here; anything more is a size mismatch.
      uint8_t probe;
      zs.next_out = &probe;
      zs.avail_out = 1;
      rc = inflate(&zs, Z_NO_FLUSH);
      if (rc == Z_STREAM_END && zs.avail_out == 1) break;
      inflateEnd(&zs);
      return MakeError("section " + s.name + ": decompressed size exceeds ch_size");
    }
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc == Z_BUF_ERROR && zs.avail_in == 0 && in_pos >= in.size()) break;
  }
  uint64_t produced = zs.total_out;
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) return MakeError("section " + s.name + ": corrupt zlib stream");
  if (produced != ch.ch_size) return MakeError("section " + s.name + ": size mismatch");
  return out;
}

std::vector<ElfNote> ElfFile::Notes() const {
  std::vector<ElfNote> out;
  std::set<uint64_t> seen;  // file offsets of note blocks already parsed
  ByteView v(bytes());
  auto parse_block = [&](uint64_t off, uint64_t size, uint64_t align) {
    if (!seen.insert(off).second) return;
    auto block = v.Sub(off, size);
    if (!block) return;
    // Notes are 4-aligned (8 when the segment says so, as in some newer toolchains).
    uint64_t a = align == 8 ? 8 : 4;
    ByteView b(*block);
    uint64_t pos = 0;
    for (int guard = 0; guard < 100000 && pos + 12 <= block->size(); guard++) {
      uint32_t namesz = b.U32(pos).value_or(0);
      uint32_t descsz = b.U32(pos + 4).value_or(0);
      uint32_t type = b.U32(pos + 8).value_or(0);
      uint64_t name_off = pos + 12;
      uint64_t desc_off = AlignUp(name_off + namesz, a);
      auto name = b.Sub(name_off, namesz);
      auto desc = b.Sub(desc_off, descsz);
      if (!name || !desc) break;
      std::string_view n = *name;
      while (!n.empty() && n.back() == '\0') n.remove_suffix(1);
      out.push_back(ElfNote{std::string(n), type, *desc});
      pos = AlignUp(desc_off + descsz, a);
    }
  };
  for (const ElfSegment& seg : segments_) {
    if (seg.type == PT_NOTE) parse_block(seg.offset, seg.filesz, seg.align);
  }
  for (const ElfSection& s : sections_) {
    if (s.type == SHT_NOTE) parse_block(s.offset, s.size, 4);
  }
  return out;
}

std::string ElfFile::BuildId() const {
  static const char kHex[] = "0123456789abcdef";
  for (const ElfNote& n : Notes()) {
    if (n.name == "GNU" && n.type == NT_GNU_BUILD_ID && !n.desc.empty()) {
      std::string out;
      for (unsigned char c : n.desc) {
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 15]);
      }
      return out;
    }
  }
  return "";
}

std::string ElfFile::GoBuildId() const {
  // The Go linker writes note type 4 ("Go" name) holding the printable build id.
  constexpr uint32_t kNoteGoBuildId = 4;
  for (const ElfNote& n : Notes()) {
    if (n.name == "Go" && n.type == kNoteGoBuildId) {
      std::string_view d = n.desc;
      while (!d.empty() && d.back() == '\0') d.remove_suffix(1);
      return std::string(d);
    }
  }
  return "";
}

std::optional<uint64_t> ElfFile::VaddrToFileOffset(uint64_t vaddr) const {
  for (const ElfSegment& seg : segments_) {
    if (seg.type != PT_LOAD) continue;
    if (vaddr >= seg.vaddr && vaddr - seg.vaddr < seg.filesz) {
      uint64_t off;
      if (__builtin_add_overflow(seg.offset, vaddr - seg.vaddr, &off)) continue;
      if (off >= size_) continue;
      return off;
    }
  }
  return std::nullopt;
}

std::optional<uint64_t> ElfFile::FileOffsetToVaddr(uint64_t offset) const {
  for (const ElfSegment& seg : segments_) {
    if (seg.type != PT_LOAD) continue;
    if (offset >= seg.offset && offset - seg.offset < seg.filesz) {
      uint64_t va;
      if (__builtin_add_overflow(seg.vaddr, offset - seg.offset, &va)) continue;
      return va;
    }
  }
  return std::nullopt;
}

Result<std::string_view> ElfFile::ReadVaddr(uint64_t vaddr, size_t len) const {
  for (const ElfSegment& seg : segments_) {
    if (seg.type != PT_LOAD) continue;
    if (vaddr < seg.vaddr || vaddr - seg.vaddr >= seg.filesz) continue;
    uint64_t rel = vaddr - seg.vaddr;
    if (len > seg.filesz - rel) continue;  // must lie in one segment's file-backed part
    auto r = ByteView(bytes()).Sub(seg.offset + rel, len);
    if (r && seg.offset + rel >= seg.offset) return *r;
  }
  return MakeError("address 0x" + Hex(vaddr) + " (+" + std::to_string(len) +
                   ") is not file-backed in " + name_);
}

std::vector<ElfSymbol> ElfFile::Symbols() const {
  std::vector<ElfSymbol> out;
  ByteView v(bytes());
  for (const char* table : {".symtab", ".dynsym"}) {
    for (size_t i = 0; i < sections_.size(); i++) {
      const ElfSection& s = sections_[i];
      if (s.name != table || (s.type != SHT_SYMTAB && s.type != SHT_DYNSYM)) continue;
      auto syms = v.Sub(s.offset, s.size);
      if (!syms) continue;
      std::string_view strtab;
      uint32_t link = i < section_links_.size() ? section_links_[i] : 0;
      if (link != 0 && link < sections_.size()) strtab = SectionData(sections_[link]);
      size_t n = syms->size() / sizeof(Elf64_Sym);
      for (size_t k = 1; k < n; k++) {  // entry 0 is the reserved null symbol
        Elf64_Sym sym;
        std::memcpy(&sym, syms->data() + k * sizeof(Elf64_Sym), sizeof(sym));
        ElfSymbol es;
        es.name = std::string(CString(strtab, sym.st_name));
        es.value = sym.st_value;
        es.size = sym.st_size;
        es.type = ELF64_ST_TYPE(sym.st_info);
        out.push_back(std::move(es));
      }
    }
  }
  return out;
}

}  // namespace sb::sym
