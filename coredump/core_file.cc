// CoreFile / ProcessImage: ELF core dumps of amd64 and arm64 Linux processes (kernel cores,
// gdb's gcore, qemu-user's qemu_*.core), read on any host.
//
// Layouts (64-bit Linux, identical on amd64 and arm64 except the register block):
//   NT_PRSTATUS (1)  struct elf_prstatus: pr_cursig (short) at 12, pr_pid (int) at 32,
//                    pr_reg (user_regs_struct) at 112. amd64: 27 u64 (rip 16, rsp 19, rbp 4,
//                    fs_base 21); arm64: 34 u64 (x0..x30, sp, pc, pstate).
//   NT_PRPSINFO (3)  struct elf_prpsinfo: pr_pid at 24, pr_fname[16] at 40.
//   NT_AUXV (6)      (type, value) u64 pairs up to AT_NULL.
//   NT_FILE          count, page_size, count x (start, end, page offset), NUL-separated paths.
//   NT_ARM_TLS       TPIDR_EL0 as the first u64, after its thread's NT_PRSTATUS.
// Notes are 4-aligned (gdb writes the PT_NOTE with p_align 1, qemu with 0).
#include "coredump/core_file.h"
#include "base/hex.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

namespace sb::coredump {
namespace {

constexpr uint32_t kNtPrstatus = 1;
constexpr uint32_t kNtPrpsinfo = 3;
constexpr uint32_t kNtAuxv = 6;
constexpr uint32_t kNtFile = 0x46494c45;
constexpr uint32_t kNtArmTls = 0x401;

constexpr size_t kPrRegOffset = 112;
constexpr size_t kAmd64Regs = 27;
constexpr size_t kArm64Regs = 34;

// Bounds that keep hostile notes from making us allocate without end.
constexpr uint64_t kMaxThreads = 1 << 20;
constexpr uint64_t kMaxFileEntries = 1 << 22;

uint64_t U64(std::string_view d, size_t off) {
  uint64_t v = 0;
  if (off <= d.size() && d.size() - off >= 8) std::memcpy(&v, d.data() + off, 8);
  return v;
}
uint32_t U32(std::string_view d, size_t off) {
  uint32_t v = 0;
  if (off <= d.size() && d.size() - off >= 4) std::memcpy(&v, d.data() + off, 4);
  return v;
}
int16_t I16(std::string_view d, size_t off) {
  int16_t v = 0;
  if (off <= d.size() && d.size() - off >= 2) std::memcpy(&v, d.data() + off, 2);
  return v;
}

// True when [off, off+len) lies inside a file of `size` bytes.
bool InFile(uint64_t off, uint64_t len, uint64_t size) { return off <= size && len <= size - off; }

// Checks what ElfFile does not: that this is a 64-bit little-endian core of a machine we
// read, and that nothing the headers promise lies past the end of the file. `head` holds at
// least the start of the file (the whole file for FromBytes).
Status CheckHeader(std::string_view head, uint64_t file_size) {
  if (head.size() < SELFMAG || std::memcmp(head.data(), ELFMAG, SELFMAG) != 0) {
    return MakeError("not a core file (no ELF magic)");
  }
  if (head.size() < EI_NIDENT) return MakeError("truncated core file (ELF header)");
  if (static_cast<uint8_t>(head[EI_CLASS]) != ELFCLASS64) {
    return MakeError("unsupported core file: not ELF64");
  }
  if (static_cast<uint8_t>(head[EI_DATA]) != ELFDATA2LSB) {
    return MakeError("unsupported core file: not little-endian");
  }
  if (head.size() < sizeof(Elf64_Ehdr)) return MakeError("truncated core file (ELF header)");
  Elf64_Ehdr eh;
  std::memcpy(&eh, head.data(), sizeof(eh));
  if (eh.e_type != ET_CORE) {
    return MakeError("not a core file (ELF type " + std::to_string(eh.e_type) + ", want ET_CORE)");
  }
  if (eh.e_machine != EM_X86_64 && eh.e_machine != EM_AARCH64) {
    return MakeError("unsupported core file machine " + std::to_string(eh.e_machine) +
                     " (only amd64 and arm64)");
  }
  if (eh.e_phnum == 0 || eh.e_phoff == 0) return MakeError("core file has no program headers");
  if (eh.e_phentsize < sizeof(Elf64_Phdr)) return MakeError("bad e_phentsize in core file");
  if (!InFile(eh.e_phoff, uint64_t{eh.e_phnum} * eh.e_phentsize, file_size)) {
    return MakeError("truncated core file (program headers past the end)");
  }
  if (eh.e_shoff != 0 && eh.e_shnum != 0 &&
      !InFile(eh.e_shoff, uint64_t{eh.e_shnum} * eh.e_shentsize, file_size)) {
    return MakeError("truncated core file (section headers past the end)");
  }
  return Status::Ok();
}

struct RawNote {
  uint32_t type;
  std::string_view name;
  std::string_view desc;
};

// The notes of one PT_NOTE block, in file order. A note that does not fit ends the block.
void ParseNoteBlock(std::string_view block, uint64_t align, std::vector<RawNote>* out) {
  const uint64_t a = align == 8 ? 8 : 4;
  auto align_up = [a](uint64_t v) { return (v + a - 1) & ~(a - 1); };
  uint64_t pos = 0;
  while (pos <= block.size() && block.size() - pos >= 12) {
    uint32_t namesz = U32(block, pos);
    uint32_t descsz = U32(block, pos + 4);
    uint32_t type = U32(block, pos + 8);
    uint64_t name_off = pos + 12;
    uint64_t desc_off = align_up(name_off + namesz);
    if (!InFile(name_off, namesz, block.size()) || !InFile(desc_off, descsz, block.size())) break;
    std::string_view name = block.substr(name_off, namesz);
    while (!name.empty() && name.back() == '\0') name.remove_suffix(1);
    out->push_back(RawNote{type, name, block.substr(desc_off, descsz)});
    pos = align_up(desc_off + descsz);
  }
}

}  // namespace

Result<std::shared_ptr<CoreFile>> CoreFile::Open(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return MakeError(path + ": " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return MakeError(path + ": not a regular file");
  }
  // Classify the header (and catch truncated header tables) before mapping the file.
  std::string head(4096, '\0');
  ssize_t got = pread(fd, head.data(), head.size(), 0);
  close(fd);
  if (got < 0) return MakeError(path + ": read: " + std::strerror(errno));
  head.resize(static_cast<size_t>(got));
  Status hs = CheckHeader(head, static_cast<uint64_t>(st.st_size));
  if (!hs.ok()) return MakeError(path + ": " + hs.error());
  auto elf = sym::ElfFile::Open(path);
  if (!elf.ok()) return MakeError(elf.error());
  auto core = Make(*elf);
  if (!core.ok()) return MakeError(path + ": " + core.error());
  return core;
}

Result<std::shared_ptr<CoreFile>> CoreFile::FromBytes(std::string bytes, std::string name) {
  Status hs = CheckHeader(bytes, bytes.size());
  if (!hs.ok()) return MakeError(name + ": " + hs.error());
  auto elf = sym::ElfFile::FromBytes(std::move(bytes), name);
  if (!elf.ok()) return MakeError(elf.error());
  auto core = Make(*elf);
  if (!core.ok()) return MakeError(name + ": " + core.error());
  return core;
}

Result<std::shared_ptr<CoreFile>> CoreFile::Make(std::shared_ptr<const sym::ElfFile> elf) {
  std::shared_ptr<CoreFile> core(new CoreFile());
  core->elf_ = std::move(elf);
  Status s = core->Parse();
  if (!s.ok()) return MakeError(s.error());
  return core;
}

Status CoreFile::Parse() {
  const sym::ElfFile& f = *elf_;
  arch_ = f.arch();
  if (f.type() != ET_CORE) return MakeError("not a core file");
  if (arch_ != sym::Arch::kAmd64 && arch_ != sym::Arch::kArm64) {
    return MakeError("unsupported core file machine");
  }
  const std::string_view bytes = f.bytes();
  const uint64_t size = bytes.size();

  std::vector<RawNote> notes;
  bool have_note = false;
  for (const sym::ElfSegment& seg : f.segments()) {
    if (seg.type == PT_LOAD) {
      if (seg.filesz == 0) continue;
      if (seg.filesz > seg.memsz && seg.memsz != 0) {
        return MakeError("bad PT_LOAD at " + Hex(seg.vaddr) + ": filesz > memsz");
      }
      if (!InFile(seg.offset, seg.filesz, size)) {
        return MakeError("truncated core file: PT_LOAD at " + Hex(seg.vaddr) + " needs bytes up to " +
                         Hex(seg.offset + seg.filesz) + ", file has " + Hex(size));
      }
      if (seg.vaddr + seg.filesz < seg.vaddr) {
        return MakeError("bad PT_LOAD at " + Hex(seg.vaddr) + ": wraps the address space");
      }
      loads_.push_back(LoadRange{seg.vaddr, seg.filesz, seg.offset});
    } else if (seg.type == PT_NOTE) {
      if (!InFile(seg.offset, seg.filesz, size)) {
        return MakeError("truncated core file: PT_NOTE at file offset " + Hex(seg.offset) +
                         " (+" + Hex(seg.filesz) + ") past the end " + Hex(size));
      }
      have_note = true;
      ParseNoteBlock(bytes.substr(seg.offset, seg.filesz), seg.align, &notes);
    }
  }
  if (!have_note) return MakeError("core file has no PT_NOTE segment");
  std::sort(loads_.begin(), loads_.end(),
            [](const LoadRange& a, const LoadRange& b) { return a.vaddr < b.vaddr; });

  const size_t nregs = arch_ == sym::Arch::kAmd64 ? kAmd64Regs : kArm64Regs;
  uint32_t psinfo_pid = 0;
  bool in_thread = false;  // the last NT_PRSTATUS is still the current thread (for NT_ARM_TLS)
  for (const RawNote& n : notes) {
    // Core notes are named "CORE" (NT_FILE too) or "LINUX" (NT_ARM_TLS, NT_X86_XSTATE);
    // gdb adds "GDB" notes whose types overlap the numbers used here.
    bool core_name = n.name == "CORE";
    bool linux_name = n.name == "LINUX";
    if (core_name && n.type == kNtPrstatus) {
      if (n.desc.size() < kPrRegOffset + nregs * 8) {
        return MakeError("malformed NT_PRSTATUS note (" + std::to_string(n.desc.size()) +
                         " bytes, need " + std::to_string(kPrRegOffset + nregs * 8) + ")");
      }
      if (threads_.size() >= kMaxThreads) return MakeError("too many NT_PRSTATUS notes");
      CoreThread t;
      t.signal = I16(n.desc, 12);
      t.lwp = U32(n.desc, 32);
      t.regs.resize(nregs);
      for (size_t i = 0; i < nregs; i++) t.regs[i] = U64(n.desc, kPrRegOffset + i * 8);
      if (arch_ == sym::Arch::kAmd64) {
        t.pc = t.regs[16];        // rip
        t.sp = t.regs[19];        // rsp
        t.fp = t.regs[4];         // rbp
        t.tls_base = t.regs[21];  // fs_base
        t.has_tls = true;
      } else {
        t.fp = t.regs[29];
        t.lr = t.regs[30];
        t.sp = t.regs[31];
        t.pc = t.regs[32];
      }
      threads_.push_back(std::move(t));
      in_thread = true;
    } else if (linux_name && n.type == kNtArmTls) {
      if (arch_ == sym::Arch::kArm64 && in_thread && n.desc.size() >= 8 && !threads_.empty()) {
        threads_.back().tls_base = U64(n.desc, 0);
        threads_.back().has_tls = true;
      }
    } else if (core_name && n.type == kNtPrpsinfo) {
      if (n.desc.size() >= 56) {
        psinfo_pid = U32(n.desc, 24);
        std::string_view fname = n.desc.substr(40, 16);
        exe_name_ = std::string(fname.substr(0, std::min(fname.find('\0'), fname.size())));
      }
    } else if (core_name && n.type == kNtAuxv) {
      for (size_t off = 0; off + 16 <= n.desc.size(); off += 16) {
        uint64_t type = U64(n.desc, off);
        if (type == AT_NULL) break;
        auxv_.emplace_back(type, U64(n.desc, off + 8));
      }
    } else if (core_name && n.type == kNtFile) {
      std::string_view d = n.desc;
      uint64_t count = U64(d, 0);
      uint64_t page_size = U64(d, 8);
      if (d.size() < 16 || count > kMaxFileEntries || count > (d.size() - 16) / 24) {
        return MakeError("malformed NT_FILE note (count " + std::to_string(count) + " in " +
                         std::to_string(d.size()) + " bytes)");
      }
      size_t names = 16 + count * 24;
      mappings_.clear();
      mappings_.reserve(count);
      for (uint64_t i = 0; i < count; i++) {
        CoreFileMapping m;
        m.start = U64(d, 16 + i * 24);
        m.end = U64(d, 16 + i * 24 + 8);
        uint64_t pgoff = U64(d, 16 + i * 24 + 16);
        if (__builtin_mul_overflow(pgoff, page_size, &m.offset)) {
          return MakeError("malformed NT_FILE note (offset overflows)");
        }
        if (names >= d.size()) return MakeError("malformed NT_FILE note (paths missing)");
        size_t end = d.find('\0', names);
        if (end == std::string_view::npos) end = d.size();
        m.path = std::string(d.substr(names, end - names));
        names = end + 1;
        mappings_.push_back(std::move(m));
      }
    }
    // Other notes (NT_FPREGSET, NT_SIGINFO, NT_X86_XSTATE, ...) do not end the current
    // thread; only the next NT_PRSTATUS does.
  }
  if (threads_.empty()) return MakeError("core file has no NT_PRSTATUS note (no threads)");
  pid_ = psinfo_pid != 0 ? psinfo_pid : threads_.front().lwp;
  return Status::Ok();
}

std::optional<uint64_t> CoreFile::Auxv(uint64_t type) const {
  for (const auto& [t, v] : auxv_) {
    if (t == type) return v;
  }
  return std::nullopt;
}

std::string CoreFile::ExecutableName() const { return exe_name_; }

size_t CoreFile::CopyPrefix(uint64_t addr, void* dst, size_t n) const {
  const std::string_view bytes = elf_->bytes();
  char* out = static_cast<char*>(dst);
  size_t done = 0;
  while (done < n) {
    uint64_t cur = addr + done;
    if (cur < addr) break;  // wrapped
    // The last load starting at or below cur.
    auto it = std::upper_bound(loads_.begin(), loads_.end(), cur,
                               [](uint64_t a, const LoadRange& l) { return a < l.vaddr; });
    if (it == loads_.begin()) break;
    --it;
    uint64_t rel = cur - it->vaddr;
    if (rel >= it->filesz) break;
    size_t take = static_cast<size_t>(std::min<uint64_t>(n - done, it->filesz - rel));
    // Parse() checked offset + filesz against the file size.
    std::memcpy(out + done, bytes.data() + it->offset + rel, take);
    done += take;
  }
  return done;
}

bool CoreFile::ReadMemory(uint64_t addr, void* dst, size_t n) const {
  if (n == 0) return true;
  return CopyPrefix(addr, dst, n) == n;
}

ProcessImage::ProcessImage(std::shared_ptr<const CoreFile> core, std::vector<BackingFile> files)
    : core_(std::move(core)), files_(std::move(files)) {
  std::map<std::string, std::shared_ptr<const sym::ElfFile>> by_path;
  opened_.reserve(files_.size());
  for (const BackingFile& b : files_) {
    auto it = by_path.find(b.path);
    if (it == by_path.end()) {
      std::shared_ptr<const sym::ElfFile> f;
      auto r = sym::ElfFile::Open(b.path);
      if (r.ok()) f = *r;
      it = by_path.emplace(b.path, std::move(f)).first;
    }
    opened_.push_back(it->second);
  }
}

bool ProcessImage::Read(uint64_t addr, void* dst, size_t n) const {
  if (n == 0) return true;
  if (addr + n < addr) return false;
  char* out = static_cast<char*>(dst);
  size_t done = 0;
  while (done < n) {
    uint64_t cur = addr + done;
    size_t got = core_ != nullptr ? core_->CopyPrefix(cur, out + done, n - done) : 0;
    if (got > 0) {
      done += got;
      continue;
    }
    // Not in the core: the first backing file that maps cur and has the byte. Take as much
    // as it has, but stop where the core could take over again.
    bool found = false;
    for (size_t i = 0; i < files_.size(); i++) {
      const BackingFile& b = files_[i];
      const sym::ElfFile* f = opened_[i].get();
      if (f == nullptr || cur < b.start || cur >= b.end) continue;
      uint64_t file_off;
      if (__builtin_add_overflow(b.offset, cur - b.start, &file_off)) continue;
      std::string_view bytes = f->bytes();
      if (file_off >= bytes.size()) continue;
      uint64_t avail = std::min<uint64_t>({b.end - cur, bytes.size() - file_off, n - done});
      // Do not read past the next core segment: the core wins where it has bytes.
      if (core_ != nullptr) {
        const auto& loads = core_->loads_;
        auto next = std::upper_bound(loads.begin(), loads.end(), cur,
                                     [](uint64_t a, const CoreFile::LoadRange& l) { return a < l.vaddr; });
        if (next != loads.end()) avail = std::min<uint64_t>(avail, next->vaddr - cur);
      }
      std::memcpy(out + done, bytes.data() + file_off, static_cast<size_t>(avail));
      done += static_cast<size_t>(avail);
      found = true;
      break;
    }
    if (!found) return false;
  }
  return true;
}

std::vector<BackingFile> ProcessImage::SegmentsOf(const sym::ElfFile& elf, const std::string& path,
                                                  uint64_t bias) {
  std::vector<BackingFile> out;
  for (const sym::ElfSegment& seg : elf.segments()) {
    if (seg.type != PT_LOAD || seg.filesz == 0) continue;
    // The kernel maps whole pages: the page holding the segment's first byte, from the file
    // page holding its first file byte. Only the file-backed part [vaddr, vaddr+filesz)
    // comes from the file; the rest of memsz is zero-filled (bss), not the file's bytes.
    constexpr uint64_t kPage = 4096;
    uint64_t start = seg.vaddr + bias;
    uint64_t misalign = seg.vaddr % kPage;
    if (seg.offset % kPage != misalign || misalign > start) misalign = 0;  // odd file: as written
    BackingFile b;
    b.path = path;
    b.start = start - misalign;
    b.end = start + seg.filesz;
    b.offset = seg.offset - misalign;
    if (b.end < b.start) continue;  // wraps the address space
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace sb::coredump
