// GoPclntab: reader for the Go runtime's pclntab (formats of Go 1.16 to 1.27). Layouts follow
// runtime/symtab.go, runtime/runtime2.go (_func, inlinedCall) and cmd/link/internal/ld/pcln.go
// of each release. Everything is read through bounds-checked views; a table that does not make
// sense yields an error at Parse or an empty answer at query time, never a crash.
#include "symbolizer/go_pclntab.h"

#include <elf.h>

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "symbolizer/byte_reader.h"
#include "symbolizer/go_moduledata.h"
#include "symbolizer/pcvalue.h"

namespace sb::sym {
namespace {

constexpr uint32_t kMagic116 = 0xfffffffa;
constexpr uint32_t kMagic118 = 0xfffffff0;
constexpr uint32_t kMagic120 = 0xfffffff1;
constexpr uint32_t kNoFuncData = 0xffffffff;   // funcdata offset meaning "none" (1.18+)
constexpr uint32_t kPcdataInlTreeIndex = 2;    // runtime _PCDATA_InlTreeIndex
constexpr uint32_t kFuncdataInlTree = 3;       // runtime _FUNCDATA_InlTree
constexpr uint64_t kMaxFuncs = 50'000'000;     // far above any real binary
constexpr int kMaxInlineDepth = 128;           // inline trees are shallow; guards cycles

struct Header {
  PclntabFormat format;
  uint8_t quantum;
  uint8_t ptr_size;
  uint64_t nfunc, nfiles, text_start;
  uint64_t funcname_off, cu_off, filetab_off, pctab_off, pcln_off;
};

std::optional<Header> ParseHeader(ByteView tab) {
  auto magic = tab.U32(0);
  if (!magic) return std::nullopt;
  Header h{};
  if (*magic == kMagic116) h.format = PclntabFormat::kGo116;
  else if (*magic == kMagic118) h.format = PclntabFormat::kGo118;
  else if (*magic == kMagic120) h.format = PclntabFormat::kGo120;
  else return std::nullopt;
  if (tab.U8(4).value_or(1) != 0 || tab.U8(5).value_or(1) != 0) return std::nullopt;
  h.quantum = tab.U8(6).value_or(0);
  h.ptr_size = tab.U8(7).value_or(0);
  if (h.quantum != 1 && h.quantum != 2 && h.quantum != 4) return std::nullopt;
  if (h.ptr_size != 8) return std::nullopt;  // ELF64 only, so 64-bit Go only
  uint64_t w[8] = {};
  int nwords = h.format == PclntabFormat::kGo116 ? 7 : 8;
  for (int i = 0; i < nwords; i++) {
    auto v = tab.U64(8 + 8 * static_cast<uint64_t>(i));
    if (!v) return std::nullopt;
    w[i] = *v;
  }
  h.nfunc = w[0];
  h.nfiles = w[1];
  int k = 2;
  if (h.format != PclntabFormat::kGo116) h.text_start = w[k++];
  h.funcname_off = w[k++];
  h.cu_off = w[k++];
  h.filetab_off = w[k++];
  h.pctab_off = w[k++];
  h.pcln_off = w[k++];
  if (h.nfunc > kMaxFuncs) return std::nullopt;
  for (uint64_t off : {h.funcname_off, h.cu_off, h.filetab_off, h.pctab_off, h.pcln_off}) {
    if (off > tab.size()) return std::nullopt;
  }
  return h;
}

// [off, next) where next is the smallest header offset above off, else the table end. The
// linker lays the sub-tables out back to back, so this is each sub-table's exact extent.
std::string_view SubTable(std::string_view tab, const Header& h, uint64_t off) {
  uint64_t end = tab.size();
  for (uint64_t o : {h.funcname_off, h.cu_off, h.filetab_off, h.pctab_off, h.pcln_off}) {
    if (o > off && o < end) end = o;
  }
  if (off > end) return {};
  return tab.substr(off, end - off);
}

}  // namespace

// The parsed tables. Shared (immutable after Parse, apart from the lazily built name index).
struct GoPclntab::Impl {
  const ElfFile* elf = nullptr;
  Header h{};
  std::string_view tab;
  uint64_t tab_vaddr = 0;
  std::string_view funcnametab, cutab, filetab, pctab, pclntable;
  uint64_t pclntable_vaddr = 0;
  uint32_t func_size = 0;      // sizeof(_func): 44 (1.16/17), 40 (1.18/19), 44 (1.20+)
  uint32_t ftab_entsize = 0;   // 16 (1.16/17), 8 (1.18+)
  uint64_t text = 0;
  std::optional<uint64_t> gofunc;  // base of funcdata offsets (1.18+), when known
  std::optional<GoModuleData> moduledata;

  std::once_flag name_once;
  std::unordered_map<std::string_view, uint32_t> by_name;

  // One _func, decoded.
  struct RawFunc {
    uint32_t index = 0;
    uint64_t off = 0;  // offset of the _func in pclntable
    uint64_t entry = 0, end = 0;
    int32_t nameoff = 0;
    uint32_t pcsp = 0, pcfile = 0, pcln = 0, npcdata = 0, cuoff = 0;
    uint8_t funcid = 0, flag = 0, nfuncdata = 0;
  };

  ByteView ftab() const { return ByteView(pclntable); }

  std::optional<uint64_t> EntryAt(uint64_t i) const {
    if (i > h.nfunc) return std::nullopt;
    if (h.format == PclntabFormat::kGo116) return ftab().U64(i * 16);
    auto off = ftab().U32(i * 8);
    if (!off) return std::nullopt;
    return text + *off;
  }
  std::optional<uint64_t> FuncOffAt(uint64_t i) const {
    if (i >= h.nfunc) return std::nullopt;
    if (h.format == PclntabFormat::kGo116) return ftab().U64(i * 16 + 8);
    auto off = ftab().U32(i * 8 + 4);
    if (!off) return std::nullopt;
    return *off;
  }

  std::optional<RawFunc> Func(uint64_t i) const {
    auto entry = EntryAt(i), end = EntryAt(i + 1), off = FuncOffAt(i);
    if (!entry || !end || !off) return std::nullopt;
    ByteView t(pclntable);
    if (!t.Sub(*off, func_size)) return std::nullopt;
    RawFunc f;
    f.index = static_cast<uint32_t>(i);
    f.off = *off;
    f.entry = *entry;
    f.end = std::max(*end, *entry);
    // Fields after the entry (uintptr in 1.16/17, u32 entryoff after).
    uint64_t p = *off + (h.format == PclntabFormat::kGo116 ? 8 : 4);
    f.nameoff = static_cast<int32_t>(*t.U32(p));
    f.pcsp = *t.U32(p + 12);
    f.pcfile = *t.U32(p + 16);
    f.pcln = *t.U32(p + 20);
    f.npcdata = *t.U32(p + 24);
    f.cuoff = *t.U32(p + 28);
    // The last four bytes are always funcID, flag, pad, nfuncdata (1.20 put startLine
    // before them).
    uint64_t tail = *off + func_size - 4;
    f.funcid = *t.U8(tail);
    f.flag = *t.U8(tail + 1);  // 0 in 1.16, which had padding there
    f.nfuncdata = *t.U8(tail + 3);
    return f;
  }

  std::string_view Name(int32_t nameoff) const {
    if (nameoff < 0) return {};
    return CString(funcnametab, static_cast<uint64_t>(nameoff));
  }

  // pctab slice of a pc-value table at offset off (0 means "no table").
  std::optional<std::string_view> Table(uint32_t off) const {
    if (off == 0 || off >= pctab.size()) return std::nullopt;
    return pctab.substr(off);
  }
  std::optional<int32_t> Value(const RawFunc& f, uint32_t table_off, uint64_t pc) const {
    auto t = Table(table_off);
    if (!t) return std::nullopt;
    return PcValueAt(*t, f.entry, h.quantum, pc);
  }
  std::optional<uint32_t> PcdataOff(const RawFunc& f, uint32_t table) const {
    if (table >= f.npcdata) return std::nullopt;
    return ByteView(pclntable).U32(f.off + func_size + 4ull * table);
  }
  // Virtual address of funcdata i, or nullopt when absent.
  std::optional<uint64_t> Funcdata(const RawFunc& f, uint32_t i) const {
    if (i >= f.nfuncdata) return std::nullopt;
    ByteView t(pclntable);
    uint64_t p = f.off + func_size + 4ull * f.npcdata;
    if (h.format == PclntabFormat::kGo116) {
      // Pointers, aligned to 8 in memory (runtime funcdata: "if p&4 != 0 { p += 4 }").
      if (((pclntable_vaddr + p) & 4) != 0) p += 4;
      auto v = t.U64(p + 8ull * i);
      if (!v || *v == 0) return std::nullopt;
      return *v;
    }
    auto v = t.U32(p + 4ull * i);
    if (!v || *v == kNoFuncData || !gofunc) return std::nullopt;
    return *gofunc + *v;
  }

  std::pair<std::string_view, int64_t> FileLine(const RawFunc& f, uint64_t pc) const {
    auto fileno = Value(f, f.pcfile, pc);
    auto line = Value(f, f.pcln, pc);
    if (!fileno || !line || *fileno < 0) return {"?", 0};
    auto fo = ByteView(cutab).U32(4ull * (static_cast<uint64_t>(f.cuoff) + *fileno));
    if (!fo || *fo == 0xffffffff) return {"?", 0};
    std::string_view file = CString(filetab, *fo);
    return {file.empty() ? std::string_view("?") : file, *line};
  }

  struct InlEntry {
    int32_t nameoff = 0;
    int32_t parent_pc = 0;
    int16_t parent = -1;  // pre-1.20 only
    uint8_t func_id = 0;
    uint8_t pad_check = 0;  // bytes that must be zero
  };
  uint32_t InlEntrySize() const { return h.format == PclntabFormat::kGo120 ? 16 : 20; }
  std::optional<InlEntry> Inl(uint64_t tree, int32_t ix) const {
    if (ix < 0 || ix > (1 << 24)) return std::nullopt;
    uint64_t sz = InlEntrySize();
    auto raw = elf->ReadVaddr(tree + sz * static_cast<uint64_t>(ix), sz);
    if (!raw.ok()) return std::nullopt;
    ByteView b(*raw);
    InlEntry e;
    if (h.format == PclntabFormat::kGo120) {
      // {funcID u8, _ [3]u8, nameOff i32, parentPc i32, startLine i32}
      e.func_id = *b.U8(0);
      e.pad_check = *b.U8(1) | *b.U8(2) | *b.U8(3);
      e.nameoff = static_cast<int32_t>(*b.U32(4));
      e.parent_pc = static_cast<int32_t>(*b.U32(8));
    } else {
      // {parent i16, funcID u8, _ u8, file i32, line i32, func_ i32, parentPc i32}
      e.parent = static_cast<int16_t>(*b.U16(0));
      e.func_id = *b.U8(2);
      e.pad_check = *b.U8(3);
      e.nameoff = static_cast<int32_t>(*b.U32(12));
      e.parent_pc = static_cast<int32_t>(*b.U32(16));
    }
    return e;
  }

  // Does base look like the real go:func.* address? Checks the inline trees of a sample of
  // functions: padding zero, names starting a string of funcnametab, parent pcs inside the
  // function. Returns nullopt when no sampled function has an inline tree.
  std::optional<bool> CheckGoFunc(uint64_t base) {
    std::optional<uint64_t> saved = gofunc;
    gofunc = base;
    int checked = 0;
    bool ok = true;
    uint64_t step = std::max<uint64_t>(1, h.nfunc / 4000);
    for (uint64_t i = 0; i < h.nfunc && checked < 40 && ok; i += step) {
      auto f = Func(i);
      if (!f) continue;
      auto tree = Funcdata(*f, kFuncdataInlTree);
      auto ixoff = PcdataOff(*f, kPcdataInlTreeIndex);
      if (!tree || !ixoff) continue;
      auto t = Table(*ixoff);
      if (!t) continue;
      PcValueIter it(*t, f->entry, h.quantum);
      for (int runs = 0; it.Next() && runs < 64 && ok; runs++) {
        if (it.value() < 0) continue;
        auto e = Inl(*tree, it.value());
        checked++;
        if (!e || e->pad_check != 0 || e->nameoff < 0 ||
            static_cast<uint64_t>(e->nameoff) >= funcnametab.size() ||
            (e->nameoff > 0 && funcnametab[e->nameoff - 1] != '\0') || e->parent_pc < 0 ||
            static_cast<uint64_t>(e->parent_pc) >= f->end - f->entry) {
          ok = false;
        }
      }
    }
    gofunc = saved;
    if (checked == 0) return std::nullopt;
    return ok;
  }

  GoFunc ToGoFunc(const RawFunc& f) const {
    GoFunc g;
    g.entry = f.entry;
    g.end = f.end;
    g.name = Name(f.nameoff);
    g.func_id = f.funcid;
    g.flag = f.flag;
    g.index = f.index;
    return g;
  }

  std::optional<RawFunc> FindRaw(uint64_t pc) const {
    if (h.nfunc == 0) return std::nullopt;
    auto first = EntryAt(0), last = EntryAt(h.nfunc);
    if (!first || !last || pc < *first || pc >= *last) return std::nullopt;
    // Largest i with entry(i) <= pc.
    uint64_t lo = 0, hi = h.nfunc;  // invariant: entry(lo) <= pc < entry(hi)
    while (hi - lo > 1) {
      uint64_t mid = lo + (hi - lo) / 2;
      auto e = EntryAt(mid);
      if (!e) return std::nullopt;
      if (*e <= pc) lo = mid;
      else hi = mid;
    }
    return Func(lo);
  }
};

namespace {

// The pclntab's bytes and address: the section when present (".gopclntab"; PIE puts it in
// ".data.rel.ro.gopclntab"), else a scan of the loaded segments for a valid header: read-only
// data first, writable (PIE's relro) second, and last the executable ones, where GNU ld puts
// all read-only sections on arm64 when Go links externally (cgo: no -z separate-code).
std::optional<std::pair<std::string_view, uint64_t>> LocateTable(const ElfFile& elf) {
  for (const char* name : {".gopclntab", ".data.rel.ro.gopclntab"}) {
    if (const ElfSection* s = elf.FindSection(name)) {
      std::string_view d = elf.SectionData(*s);
      if (!d.empty() && ParseHeader(ByteView(d))) return std::make_pair(d, s->addr);
    }
  }
  for (int pass = 0; pass < 3; pass++) {
    for (const ElfSegment& seg : elf.segments()) {
      if (seg.type != PT_LOAD) continue;
      int kind = (seg.flags & PF_X) != 0 ? 2 : (seg.flags & PF_W) != 0 ? 1 : 0;
      if (kind != pass) continue;
      auto d = ByteView(elf.bytes()).Sub(seg.offset, seg.filesz);
      if (!d) continue;
      // The header is pointer-aligned in memory.
      uint64_t start = (8 - (seg.vaddr & 7)) & 7;
      for (uint64_t off = start; off + 72 <= d->size(); off += 8) {
        uint32_t m;
        std::memcpy(&m, d->data() + off, 4);
        if (m != kMagic116 && m != kMagic118 && m != kMagic120) continue;
        std::string_view t = d->substr(off);
        auto h = ParseHeader(ByteView(t));
        if (!h || h->nfunc == 0) continue;
        // Require the first function's name to be a plausible string to skip stray words.
        if (h->funcname_off == 0 || h->pcln_off <= h->funcname_off) continue;
        return std::make_pair(t, seg.vaddr + off);
      }
    }
  }
  return std::nullopt;
}

// Where vaddr is file-backed in a loaded segment: 0 nowhere, 1 in a non-executable one (where
// go:func.* is: read-only data; the pclntab itself in Go 1.27), 2 in an executable one. GNU ld
// on arm64 (external linking: cgo) puts .rodata in the text's segment (no -z separate-code), so
// go:func.* is there; a word a wrong layout guess yields may point into the text as well, so a
// candidate there must pass CheckGoFunc's decoding, never be taken as a fallback.
int LoadedSegmentKind(const ElfFile& elf, uint64_t vaddr) {
  for (const ElfSegment& seg : elf.segments()) {
    if (seg.type == PT_LOAD && vaddr >= seg.vaddr && vaddr - seg.vaddr < seg.filesz)
      return (seg.flags & PF_X) == 0 ? 1 : 2;
  }
  return 0;
}

}  // namespace

Result<std::shared_ptr<GoPclntab>> GoPclntab::Parse(std::shared_ptr<const ElfFile> elf) {
  if (!elf) return MakeError("no ELF file");
  auto located = LocateTable(*elf);
  if (!located) return MakeError(elf->name() + ": no Go pclntab found");
  auto impl = std::make_shared<Impl>();
  impl->elf = elf.get();
  impl->tab = located->first;
  impl->tab_vaddr = located->second;
  impl->h = *ParseHeader(ByteView(impl->tab));
  const Header& h = impl->h;
  impl->funcnametab = SubTable(impl->tab, h, h.funcname_off);
  impl->cutab = SubTable(impl->tab, h, h.cu_off);
  impl->filetab = SubTable(impl->tab, h, h.filetab_off);
  impl->pctab = SubTable(impl->tab, h, h.pctab_off);
  impl->pclntable = SubTable(impl->tab, h, h.pcln_off);
  impl->pclntable_vaddr = impl->tab_vaddr + h.pcln_off;
  switch (h.format) {
    case PclntabFormat::kGo116: impl->func_size = 44; impl->ftab_entsize = 16; break;
    case PclntabFormat::kGo118: impl->func_size = 40; impl->ftab_entsize = 8; break;
    case PclntabFormat::kGo120: impl->func_size = 44; impl->ftab_entsize = 8; break;
  }
  if ((h.nfunc + 1) * impl->ftab_entsize > impl->pclntable.size()) {
    return MakeError(elf->name() + ": pclntab function table truncated");
  }

  PclnLayout layout;
  layout.table_vaddr = impl->tab_vaddr;
  layout.table_size = impl->tab.size();
  layout.funcname_off = h.funcname_off;
  layout.cu_off = h.cu_off;
  layout.filetab_off = h.filetab_off;
  layout.pctab_off = h.pctab_off;
  layout.pcln_off = h.pcln_off;
  layout.nfunc = h.nfunc;
  impl->moduledata = FindGoModuleData(*elf, layout);

  // Text start: the header's (1.18-1.25), else moduledata.text (1.26+ write 0 there), else the
  // .text section. 1.16/1.17 store absolute entries and need none.
  if (h.format != PclntabFormat::kGo116) {
    if (h.text_start != 0) {
      impl->text = h.text_start;
    } else if (impl->moduledata) {
      impl->text = impl->moduledata->Word(GoModuleData::kText);
    } else if (const ElfSection* t = elf->FindSection(".text")) {
      impl->text = t->addr;
    } else {
      return MakeError(elf->name() + ": pclntab has no text start and no moduledata was found");
    }
  }

  // go:func.* base for funcdata offsets: a moduledata word, validated by decoding inline trees.
  if (h.format != PclntabFormat::kGo116 && impl->moduledata) {
    std::optional<uint64_t> fallback;
    for (int w : GoFuncWordCandidates(h.format == PclntabFormat::kGo120)) {
      uint64_t cand = impl->moduledata->Word(w);
      int kind = cand == 0 ? 0 : LoadedSegmentKind(*elf, cand);
      if (kind == 0) continue;
      auto ok = impl->CheckGoFunc(cand);
      if (ok && *ok) {
        impl->gofunc = cand;
        break;
      }
      if (!ok && !fallback && kind == 1) fallback = cand;  // nothing to check against: first plausible
    }
    if (!impl->gofunc && fallback) impl->gofunc = fallback;
  }

  std::shared_ptr<GoPclntab> p(new GoPclntab());
  p->elf_ = std::move(elf);
  p->impl_ = impl;
  p->format_ = h.format;
  p->pc_quantum_ = h.quantum;
  p->ptr_size_ = h.ptr_size;
  p->text_start_ = h.format == PclntabFormat::kGo116
                       ? (impl->moduledata ? impl->moduledata->Word(GoModuleData::kText)
                                           : impl->EntryAt(0).value_or(0))
                       : impl->text;
  p->table_addr_ = impl->tab_vaddr;
  p->nfunc_ = h.nfunc;
  // FuncIDWrapper is the last value of the runtime's funcID enum in every release (21 in 1.18
  // to 1.21, 22 in 1.22 to 1.24, 23 from 1.25: the numbers shift, the position does not), and
  // every Go binary has wrappers (eq/hash functions, method-value and go-statement wrappers),
  // so the largest funcID in the table is the wrapper's. Below 20 it cannot be (too few
  // special functions): then no function is treated as a wrapper.
  uint8_t max_id = 0;
  for (uint64_t i = 0; i < h.nfunc; i++) {
    if (auto f = impl->Func(i)) max_id = std::max(max_id, f->funcid);
  }
  p->wrapper_id_ = max_id >= 20 ? max_id : 0;
  return p;
}

Result<GoFunc> GoPclntab::FuncAt(size_t index) const {
  auto f = impl_->Func(index);
  if (!f) return MakeError("function index " + std::to_string(index) + " out of range or corrupt");
  return impl_->ToGoFunc(*f);
}

std::optional<GoFunc> GoPclntab::FindFunc(uint64_t pc) const {
  auto f = impl_->FindRaw(pc);
  if (!f) return std::nullopt;
  return impl_->ToGoFunc(*f);
}

std::optional<GoFunc> GoPclntab::FindFuncByName(std::string_view name) const {
  Impl& im = *impl_;
  std::call_once(im.name_once, [&im] {
    for (uint64_t i = 0; i < im.h.nfunc; i++) {
      auto f = im.Func(i);
      if (!f) continue;
      std::string_view n = im.Name(f->nameoff);
      if (!n.empty()) im.by_name.emplace(n, static_cast<uint32_t>(i));  // first one wins
    }
  });
  auto it = im.by_name.find(name);
  if (it == im.by_name.end()) return std::nullopt;
  auto f = im.Func(it->second);
  if (!f) return std::nullopt;
  return im.ToGoFunc(*f);
}

std::vector<SourceFrame> GoPclntab::Symbolize(uint64_t pc) const {
  std::vector<SourceFrame> out;
  const Impl& im = *impl_;
  auto f = im.FindRaw(pc);
  if (!f) return out;
  uint64_t tracepc = pc;
  // Expand inlining the way the runtime's traceback does: each inline-tree level names the
  // inlined callee; its file/line is the pc tables' answer at the current pc; then move to
  // the parent's pc (an instruction whose position is the call site).
  auto tree = im.Funcdata(*f, kFuncdataInlTree);
  auto ixoff = im.PcdataOff(*f, kPcdataInlTreeIndex);
  if (tree && ixoff) {
    for (int depth = 0; depth < kMaxInlineDepth; depth++) {
      auto ix = im.Value(*f, *ixoff, tracepc);
      if (!ix || *ix < 0) break;
      auto e = im.Inl(*tree, *ix);
      if (!e) break;
      auto [file, line] = im.FileLine(*f, tracepc);
      std::string_view name = im.Name(e->nameoff);
      out.push_back(SourceFrame{std::string(name.empty() ? "?" : name), std::string(file), line,
                                true, IsWrapperId(e->func_id)});
      uint64_t parent = f->entry + static_cast<uint32_t>(e->parent_pc);
      if (e->parent_pc < 0 || parent >= f->end) break;
      tracepc = parent;
    }
  }
  auto [file, line] = im.FileLine(*f, tracepc);
  std::string_view name = im.Name(f->nameoff);
  out.push_back(SourceFrame{std::string(name.empty() ? "?" : name), std::string(file), line,
                            false, IsWrapperId(f->funcid)});
  return out;
}

bool GoPclntab::IsWrapperId(uint8_t func_id) const { return func_id == wrapper_id_ && wrapper_id_ != 0; }

std::optional<int32_t> GoPclntab::SpDelta(uint64_t pc) const {
  auto f = impl_->FindRaw(pc);
  if (!f) return std::nullopt;
  return impl_->Value(*f, f->pcsp, pc);
}

Result<std::vector<SpDeltaRun>> GoPclntab::SpDeltaRuns(const GoFunc& g) const {
  auto f = impl_->Func(g.index);
  if (!f || f->entry != g.entry) return MakeError("unknown function");
  auto t = impl_->Table(f->pcsp);
  if (!t) return MakeError("function " + std::string(g.name) + " has no pcsp table");
  std::vector<SpDeltaRun> runs;
  PcValueIter it(*t, f->entry, pc_quantum_);
  while (it.Next()) {
    if (it.run_start() >= f->end) break;
    runs.push_back(SpDeltaRun{it.run_start(), it.value()});
  }
  return runs;
}

std::optional<SourceFrame> GoPclntab::FileLine(uint64_t pc) const {
  auto f = impl_->FindRaw(pc);
  if (!f) return std::nullopt;
  auto [file, line] = impl_->FileLine(*f, pc);
  std::string_view name = impl_->Name(f->nameoff);
  return SourceFrame{std::string(name.empty() ? "?" : name), std::string(file), line, false};
}

}  // namespace sb::sym
