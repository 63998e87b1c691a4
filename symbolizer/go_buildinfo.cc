// Go build info reader (format of debug/buildinfo): a 32-byte header "\xff Go buildinf:",
// pointer size, flags; then either inline varint-prefixed strings (flags & 2, Go 1.18+) or
// two pointers to Go string headers (older toolchains).
#include "symbolizer/go_buildinfo.h"

#include <cctype>
#include <cstring>

#include "symbolizer/byte_reader.h"

namespace sb::sym {
namespace {

constexpr std::string_view kMagic("\xff Go buildinf:", 14);
constexpr uint8_t kFlagBigEndian = 1;
constexpr uint8_t kFlagInline = 2;
constexpr uint64_t kMaxString = 1 << 24;

// Reads a uvarint (64-bit) length then that many bytes.
std::optional<std::string_view> VarintString(std::string_view d, size_t* pos) {
  uint64_t n = 0;
  for (unsigned shift = 0;; shift += 7) {
    if (shift > 63 || *pos >= d.size()) return std::nullopt;
    uint8_t b = static_cast<uint8_t>(d[(*pos)++]);
    n |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) break;
  }
  if (n > d.size() - *pos) return std::nullopt;
  std::string_view s = d.substr(*pos, n);
  *pos += n;
  return s;
}

// A Go string whose header {ptr, len} sits at vaddr.
std::optional<std::string> GoStringAt(const ElfFile& elf, uint64_t vaddr, int ptr_size) {
  auto hdr = elf.ReadVaddr(vaddr, 2 * ptr_size);
  if (!hdr.ok()) return std::nullopt;
  ByteView b(*hdr);
  auto ptr = b.Word(0, ptr_size), len = b.Word(ptr_size, ptr_size);
  if (!ptr || !len || *len > kMaxString) return std::nullopt;
  if (*len == 0) return std::string();
  auto data = elf.ReadVaddr(*ptr, *len);
  if (!data.ok()) return std::nullopt;
  return std::string(*data);
}

// The 32+ bytes starting at the magic: from the section, else a scan of the file at 16-byte
// aligned offsets (the linker aligns the symbol to 16).
std::optional<std::string_view> FindBlob(const ElfFile& elf) {
  if (const ElfSection* s = elf.FindSection(".go.buildinfo")) {
    std::string_view d = elf.SectionData(*s);
    if (d.size() >= 32 && d.substr(0, kMagic.size()) == kMagic) return d;
  }
  std::string_view all = elf.bytes();
  for (size_t pos = all.find(kMagic); pos != std::string_view::npos;
       pos = all.find(kMagic, pos + 1)) {
    if (pos % 16 == 0 && all.size() - pos >= 32) return all.substr(pos);
  }
  return std::nullopt;
}

std::string ModulePath(std::string_view modinfo) {
  // The runtime wraps modinfo in 16-byte sentinels; strip them when present (debug/buildinfo
  // checks for the '\n' just before the trailing sentinel).
  if (modinfo.size() >= 33 && modinfo[modinfo.size() - 17] == '\n') {
    modinfo = modinfo.substr(16, modinfo.size() - 32);
  }
  size_t pos = 0;
  while (pos < modinfo.size()) {
    size_t nl = modinfo.find('\n', pos);
    std::string_view line = modinfo.substr(pos, nl == std::string_view::npos ? nl : nl - pos);
    if (line.substr(0, 5) == "path\t") return std::string(line.substr(5));
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return "";
}

}  // namespace

bool ParseGoVersion(const std::string& text, int* major, int* minor) {
  // Accepts "go1.21.3", "go1.22rc1", "devel go1.23-abc", "go1.21.3 X:boringcrypto".
  for (size_t pos = text.find("go"); pos != std::string::npos; pos = text.find("go", pos + 1)) {
    size_t i = pos + 2;
    size_t d1 = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) i++;
    if (i == d1 || i - d1 > 4 || i >= text.size() || text[i] != '.') continue;
    size_t d2 = ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) i++;
    if (i == d2 || i - d2 > 4) continue;
    *major = std::stoi(text.substr(d1, d2 - 1 - d1));
    *minor = std::stoi(text.substr(d2, i - d2));
    return true;
  }
  return false;
}

Result<GoBuildInfo> ReadGoBuildInfo(const ElfFile& elf) {
  auto blob = FindBlob(elf);
  if (!blob) return MakeError(elf.name() + ": no Go build info");
  ByteView b(*blob);
  int ptr_size = *b.U8(14);
  uint8_t flags = *b.U8(15);
  GoBuildInfo info;
  std::string modinfo;
  if (flags & kFlagInline) {
    size_t pos = 32;
    auto vers = VarintString(*blob, &pos);
    if (!vers) return MakeError(elf.name() + ": truncated Go build info");
    info.go_version = std::string(*vers);
    if (auto mod = VarintString(*blob, &pos)) modinfo = std::string(*mod);
  } else {
    if (ptr_size != 4 && ptr_size != 8) return MakeError(elf.name() + ": bad build info ptrsize");
    if (flags & kFlagBigEndian) return MakeError(elf.name() + ": big-endian build info");
    auto vp = b.Word(16, ptr_size), mp = b.Word(16 + ptr_size, ptr_size);
    if (!vp || !mp) return MakeError(elf.name() + ": truncated Go build info");
    auto vers = GoStringAt(elf, *vp, ptr_size);
    if (!vers) return MakeError(elf.name() + ": Go build info version unreadable");
    info.go_version = *vers;
    if (auto mod = GoStringAt(elf, *mp, ptr_size)) modinfo = *mod;
  }
  if (info.go_version.empty()) return MakeError(elf.name() + ": empty Go version in build info");
  info.module_path = ModulePath(modinfo);
  if (!ParseGoVersion(info.go_version, &info.major, &info.minor)) {
    return MakeError(elf.name() + ": unrecognized Go version \"" + info.go_version + "\"");
  }
  return info;
}

}  // namespace sb::sym
