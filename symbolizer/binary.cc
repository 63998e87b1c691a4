// Binary and BinaryCache: one loaded file with its Go tables and native symbols, shared by
// every process that maps it.
#include "symbolizer/binary.h"

#include <elf.h>
#include <sys/auxv.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "symbolizer/byte_reader.h"

namespace sb::sym {

Result<std::shared_ptr<Binary>> Binary::Load(const std::string& path) {
  auto elf = ElfFile::Open(path);
  if (!elf.ok()) return elf.take_error();
  return FromElf(*elf);
}

Result<std::shared_ptr<Binary>> Binary::FromElf(std::shared_ptr<const ElfFile> elf) {
  if (!elf) return MakeError("no ELF file");
  auto b = std::make_shared<Binary>();
  b->elf_ = elf;
  b->loaded_build_id_ = b->build_id();
  // Go tables and build info are optional: most files are not Go, and a Go file with a damaged
  // table still has its native symbols.
  if (auto go = GoPclntab::Parse(elf); go.ok()) b->go_ = *go;
  if (auto bi = ReadGoBuildInfo(*elf); bi.ok()) b->build_info_ = *bi;

  std::vector<ElfSymbol> funcs;
  for (ElfSymbol& s : elf->Symbols()) {
    if ((s.type == STT_FUNC || s.type == STT_GNU_IFUNC) && s.value != 0 && !s.name.empty()) {
      funcs.push_back(std::move(s));
    }
  }
  std::sort(funcs.begin(), funcs.end(), [](const ElfSymbol& a, const ElfSymbol& c) {
    return a.value != c.value ? a.value < c.value : a.size > c.size;
  });
  // .symtab and .dynsym repeat many symbols: keep one per (address, name).
  funcs.erase(std::unique(funcs.begin(), funcs.end(),
                          [](const ElfSymbol& a, const ElfSymbol& c) {
                            return a.value == c.value && a.name == c.name;
                          }),
              funcs.end());
  // Size 0 (hand-written assembly often omits .size): the symbol lasts to the next address,
  // unless a sized function starts at the same address (sorted before it): then it is a marker
  // there (Go's runtime.etext at a cgo binary's first C function) and names nothing.
  for (size_t i = 0; i < funcs.size(); i++) {
    if (funcs[i].size != 0) continue;
    if (i > 0 && funcs[i - 1].value == funcs[i].value) continue;
    for (size_t j = i + 1; j < funcs.size(); j++) {
      if (funcs[j].value > funcs[i].value) {
        funcs[i].size = funcs[j].value - funcs[i].value;
        break;
      }
    }
  }
  b->funcs_ = std::move(funcs);
  return b;
}

bool Binary::Intact() const { return loaded_build_id_.empty() || build_id() == loaded_build_id_; }

std::string Binary::build_id() const {
  std::string id = elf_->BuildId();
  if (!id.empty()) return id;
  return elf_->GoBuildId();
}

const ElfSymbol* Binary::FindSymbol(uint64_t vaddr) const {
  // Last symbol starting at or below vaddr; with overlapping symbols (aliases) step back to
  // one that actually contains the address.
  auto it = std::upper_bound(funcs_.begin(), funcs_.end(), vaddr,
                             [](uint64_t v, const ElfSymbol& s) { return v < s.value; });
  for (int guard = 0; it != funcs_.begin() && guard < 16; guard++) {
    --it;
    if (vaddr - it->value < it->size) return &*it;
  }
  return nullptr;
}

std::vector<SourceFrame> Binary::Symbolize(uint64_t vaddr) const {
  if (go_) {
    auto frames = go_->Symbolize(vaddr);
    if (!frames.empty()) return frames;
  }
  if (const ElfSymbol* s = FindSymbol(vaddr)) return {SourceFrame{s->name, "", 0, false}};
  return {};
}

Result<std::shared_ptr<Binary>> BinaryCache::Get(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return MakeError(path + ": " + std::strerror(errno));
  // The file's identity, not its name: 50 processes of one executable open it as
  // /proc/PID/exe under 50 names, and it is parsed once.
  std::string key = std::to_string(st.st_dev) + ':' + std::to_string(st.st_ino) + ':' +
                    std::to_string(st.st_size) + ':' + std::to_string(st.st_mtim.tv_sec) + '.' +
                    std::to_string(st.st_mtim.tv_nsec);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_key_.find(key);
    if (it != by_key_.end()) {
      hits_++;
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      return it->second.binary;
    }
  }
  // Load outside the lock: parsing a large binary must not stall other lookups. Two threads
  // racing on the same new file both load it; the first insert wins.
  auto b = Binary::Load(path);
  if (!b.ok()) return b;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_key_.find(key);
  if (it != by_key_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return it->second.binary;
  }
  misses_++;
  Entry e;
  e.binary = *b;
  e.bytes = (*b)->elf().bytes().size();
  lru_.push_front(key);
  e.lru = lru_.begin();
  bytes_ += e.bytes;
  by_key_.emplace(key, std::move(e));
  std::shared_ptr<Binary> out = *b;
  EvictLocked();  // never the one just loaded: `out` holds it
  return out;
}

void BinaryCache::EvictLocked() {
  if (max_bytes_ == 0) return;
  // From the least recently used end; a binary someone else holds stays.
  for (auto k = lru_.end(); bytes_ > max_bytes_ && k != lru_.begin();) {
    --k;
    auto it = by_key_.find(*k);
    if (it->second.binary.use_count() > 1) continue;
    bytes_ -= it->second.bytes;
    evictions_++;
    by_key_.erase(it);
    k = lru_.erase(k);
  }
}

void BinaryCache::set_max_bytes(uint64_t max_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  max_bytes_ = max_bytes;
  EvictLocked();
}

void BinaryCache::Trim() {
  std::lock_guard<std::mutex> lock(mu_);
  EvictLocked();
}

BinaryCacheStats BinaryCache::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  BinaryCacheStats s;
  s.bytes = bytes_;
  s.entries = by_key_.size();
  s.max_bytes = max_bytes_;
  s.hits = hits_;
  s.misses = misses_;
  s.evictions = evictions_;
  return s;
}

void BinaryCache::Forget(const Binary* b) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = by_key_.begin(); it != by_key_.end();) {
    if (it->second.binary.get() == b) {
      bytes_ -= it->second.bytes;
      lru_.erase(it->second.lru);
      it = by_key_.erase(it);
    } else {
      ++it;
    }
  }
}

namespace {

// Size of the vDSO image mapped at base: the larger of the PT_LOAD ends and the end of the
// section header table, both read from the in-memory ELF header.
size_t VdsoImageSize(const char* base) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, base, sizeof(eh));
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) {
    return 0;
  }
  uint64_t size = sizeof(eh);
  for (unsigned i = 0; i < eh.e_phnum && i < 64; i++) {
    Elf64_Phdr ph;
    std::memcpy(&ph, base + eh.e_phoff + i * static_cast<uint64_t>(eh.e_phentsize), sizeof(ph));
    if (ph.p_type == PT_LOAD) size = std::max(size, ph.p_offset + ph.p_filesz);
  }
  size = std::max<uint64_t>(size, eh.e_shoff + uint64_t{eh.e_shnum} * eh.e_shentsize);
  // The image is a few pages at most; refuse anything absurd rather than read past it.
  return size <= (1u << 20) ? static_cast<size_t>(size) : 0;
}

}  // namespace

Result<std::shared_ptr<Binary>> BinaryCache::Vdso() {
  std::lock_guard<std::mutex> lock(mu_);
  if (vdso_) return vdso_;
  unsigned long base = getauxval(AT_SYSINFO_EHDR);
  if (base == 0) return MakeError("no vDSO in this process (AT_SYSINFO_EHDR is 0)");
  const char* p = reinterpret_cast<const char*>(base);
  size_t size = VdsoImageSize(p);
  if (size == 0) return MakeError("vDSO image has an unexpected ELF header");
  auto elf = ElfFile::FromBytes(std::string(p, size), "[vdso]");
  if (!elf.ok()) return elf.take_error();
  auto b = Binary::FromElf(*elf);
  if (!b.ok()) return b;
  vdso_ = *b;
  return vdso_;
}

}  // namespace sb::sym
