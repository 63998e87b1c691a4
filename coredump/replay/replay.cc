#include "coredump/replay/replay.h"
#include "base/hex.h"

#include <algorithm>
#include <cstdio>

#include "coredump/build_id_note.h"
#include "coredump/core_file.h"
#include "ebpf/unwind/host_unwind.h"
#include "recorder/sample_labels.h"
#include "symbolizer/binary.h"
#include "unwinder/go_binary_facts.h"

namespace sb::coredump {
namespace {

constexpr uint64_t kAtSysinfoEhdr = 33;
constexpr uint64_t kAtEntry = 9;

std::string Base(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// A piece of the address space with the binary that explains it.
struct Image {
  uint64_t start = 0, end = 0;
  uint64_t bias = 0;  // runtime address - link address
  std::string name;
  std::shared_ptr<sym::Binary> binary;
};

class FrameFormatter {
 public:
  explicit FrameFormatter(std::vector<Image> images) : images_(std::move(images)) {}

  // "fn+0xOFF in file.go:LINE" for the physical frame, "fn in file.go:LINE (inlined)" before it
  // for each inlined call; ELF symbols as "sym+0xOFF in lib.so"; unknown as "0xADDR".
  void Format(uint64_t pc, bool exact, std::vector<std::string>* out) const {
    const Image* img = Find(pc);
    if (img == nullptr || !img->binary) {
      out->push_back(img ? img->name + "+" + Hex(pc - img->start) : Hex(pc));
      return;
    }
    uint64_t link = pc - img->bias;
    uint64_t lookup = exact ? link : link - 1;
    if (const sym::GoPclntab* go = img->binary->go()) {
      if (auto fn = go->FindFunc(lookup)) {
        auto frames = go->Symbolize(lookup);
        for (size_t i = 0; i < frames.size(); i++) {
          const auto& f = frames[i];
          std::string where = " in " + Base(f.file) + ":" + std::to_string(f.line);
          if (f.inlined)
            out->push_back(f.function + where + " (inlined)");
          else
            out->push_back(f.function + "+" + Hex(link - fn->entry) + where);
        }
        if (!frames.empty()) return;
      }
    }
    if (const sym::ElfSymbol* s = img->binary->FindSymbol(lookup)) {
      out->push_back(s->name + "+" + Hex(link - s->value) + " in " + img->name);
      return;
    }
    out->push_back(img->name + "+" + Hex(pc - img->start));
  }

 private:
  const Image* Find(uint64_t pc) const {
    for (const auto& i : images_)
      if (pc >= i.start && pc < i.end) return &i;
    return nullptr;
  }
  std::vector<Image> images_;
};

// The vDSO image, read from the core's memory at AT_SYSINFO_EHDR.
std::optional<Image> VdsoImage(const CoreFile& core) {
  auto base = core.Auxv(kAtSysinfoEhdr);
  if (!base) return std::nullopt;
  for (const auto& seg : core.elf().segments()) {
    if (seg.type != 1 || *base < seg.vaddr || *base >= seg.vaddr + seg.filesz) continue;
    uint64_t size = seg.vaddr + seg.filesz - *base;
    std::string bytes(size, '\0');
    if (!core.ReadMemory(*base, bytes.data(), size)) return std::nullopt;
    auto elf = sym::ElfFile::FromBytes(std::move(bytes), "[vdso]");
    Image img;
    img.start = *base;
    img.end = *base + size;
    img.name = "[vdso]";
    if (elf.ok()) {
      auto bin = sym::Binary::FromElf(*elf);
      if (bin.ok()) img.binary = *bin;
      for (const auto& s : (*elf)->segments())
        if (s.type == 1) {
          img.bias = *base - (s.vaddr - s.offset);
          break;
        }
    }
    return img;
  }
  return std::nullopt;
}

// The build id check of ReplayInput::check_build_id: "" and *status set, or an error line.
Result<std::string> CheckBuildId(const CoreFile& core, const std::string& exe_path, const sym::ElfFile& local,
                                 const std::string& local_path) {
  const CoreFileMapping* first = nullptr;
  for (const auto& m : core.mappings())
    if (m.path == exe_path && m.offset == 0 && (first == nullptr || m.start < first->start)) first = &m;
  if (first == nullptr) return std::string("not compared: the core lists no mapping of " + exe_path);
  std::string page(std::min<uint64_t>(4096, first->end - first->start), '\0');
  if (!core.ReadMemory(first->start, page.data(), page.size()))
    return std::string("not compared: the core lacks the first page of " + exe_path);
  auto ids = BuildIdsFromHeaderPage(page);
  if (!ids.ok()) return std::string("not compared: " + ids.error());
  if (ids->empty()) return std::string("not compared: no build id note in the core's copy of " + exe_path);
  BuildIds mine{local.BuildId(), local.GoBuildId()};
  if (std::string diff = CompareBuildIds(*ids, mine); !diff.empty())
    return MakeError("build id mismatch: " + diff + " (" + local_path +
                     " is not the executable that dumped this core)");
  return std::string("matches (") + (ids->go.empty() ? "GNU build id " + ids->gnu : "Go build id " + ids->go) + ")";
}

}  // namespace

Result<ReplayResult> Replay(const ReplayInput& in) {
  auto core = CoreFile::Open(in.core_path);
  if (!core.ok()) return core.take_error();
  auto exe_local = in.files.find(in.executable);
  if (exe_local == in.files.end()) return MakeError("replay: no local copy of the executable " + in.executable);
  auto exe = sym::Binary::Load(exe_local->second);
  if (!exe.ok()) return exe.take_error();
  auto facts = unwinder::AnalyzeGoBinary(**exe, in.executable, exe_local->second);
  if (!facts.ok()) return facts.take_error();

  std::string build_id;
  if (in.check_build_id) {
    auto b = CheckBuildId(**core, in.executable, (*exe)->elf(), exe_local->second);
    if (!b.ok()) return b.take_error();
    build_id = *b;
  }
  // The executable's load bias: AT_ENTRY against the ELF entry point (0 for non-PIE).
  uint64_t bias = 0;
  if (auto entry = (*core)->Auxv(kAtEntry)) bias = *entry - (*exe)->elf().entry();

  std::vector<BackingFile> backing;
  std::vector<Image> images;
  bool exe_in_nt_file = false;
  for (const auto& m : (*core)->mappings()) {
    auto local = in.files.find(m.path);
    if (local == in.files.end()) continue;
    backing.push_back(BackingFile{local->second, m.start, m.end, m.offset});
    if (m.path == in.executable) exe_in_nt_file = true;
  }
  if (!exe_in_nt_file) {  // qemu cores list no files: place the executable's segments
    auto segs = ProcessImage::SegmentsOf((*exe)->elf(), exe_local->second, bias);
    backing.insert(backing.end(), segs.begin(), segs.end());
  }
  // Images for symbolization: the executable, libraries we have, the vDSO.
  {
    Image img;
    img.binary = *exe;
    img.bias = bias;
    img.name = Base(in.executable);
    img.start = UINT64_MAX;
    for (const auto& s : (*exe)->elf().segments())
      if (s.type == 1) {
        img.start = std::min(img.start, s.vaddr + bias);
        img.end = std::max(img.end, s.vaddr + s.memsz + bias);
      }
    images.push_back(img);
  }
  for (const auto& m : (*core)->mappings()) {
    if (m.path == in.executable) continue;
    Image img;
    img.start = m.start;
    img.end = m.end;
    img.name = Base(m.path);
    if (auto local = in.files.find(m.path); local != in.files.end()) {
      auto b = sym::Binary::Load(local->second);
      if (b.ok()) {
        img.binary = *b;
        for (const auto& s : (*b)->elf().segments())
          if (s.type == 1 && m.offset >= s.offset && m.offset < s.offset + std::max<uint64_t>(s.filesz, 1)) {
            img.bias = m.start - (s.vaddr + (m.offset - s.offset));
            break;
          }
      }
    }
    images.push_back(img);
  }
  auto vdso = VdsoImage(**core);
  if (vdso) images.push_back(*vdso);

  sb_proc_info info = unwinder::MakeProcInfo(**facts, bias, 0);
  if (vdso) {
    info.vdso_start = vdso->start;
    info.vdso_end = vdso->end;
  }
  ProcessImage memory(*core, backing);
  FrameFormatter fmt(images);

  ReplayResult result;
  result.arch = sym::ArchName((*core)->arch());
  result.go_version = (*facts)->go_version;
  result.build_id = build_id;
  for (const auto& t : (*core)->threads()) {
    unwind::HostUnwindInput hin;
    hin.info = &info;
    hin.deltas = &(*facts)->pcsp.cells;
    hin.memory = &memory;
    hin.fault_addresses = in.fault_addresses;
    hin.record_reads = in.record_reads;
    unwind::Registers regs;
    regs.pc = t.pc;
    regs.sp = t.sp;
    regs.fp = t.fp;
    regs.lr = t.lr;
    regs.tls_base = t.has_tls ? t.tls_base : 0;
    if ((*core)->arch() == sym::Arch::kArm64 && t.regs.size() > 28) regs.g_reg = t.regs[28];
    if ((*core)->arch() == sym::Arch::kAmd64 && t.regs.size() > 1) regs.g_reg = t.regs[1];  // r14
    auto r = unwind::UnwindOnHost(hin, regs, &result.counters);
    ReplayedThread rt;
    rt.lwp = t.lwp;
    rt.stop = unwind::StopReasonName(r.sample.stop_reason);
    for (int i = 0; i < SB_CROSS_MAX; i++)
      if (r.sample.crossed & (1u << i)) rt.crossed.push_back(unwind::CrossingName(i));
    for (uint32_t i = 0; i < r.sample.nframes && i < SB_MAX_FRAMES; i++) {
      bool exact = (r.sample.exact[i >> 6] >> (i & 63)) & 1;
      fmt.Format(r.sample.frames[i], exact, &rt.frames);
    }
    rt.faults_hit = r.faults_hit;
    rt.reads = r.reads;
    if (r.sample.flags & SB_SAMPLE_HAS_GOID) rt.goid = r.sample.goid;
    // Labels as the sampler reads them after its unwind: of the g the walk names (goid_g).
    std::set<uint64_t> label_faults;  // an injected fault is the unwind's to hit, not the labels'
    sb_labels labels = unwind::ReadLabelsOnHost(hin, r.sample.goid_g, &label_faults);
    rt.labels_status = recorder::LabelsStatusName(labels.status);
    for (const auto& [k, v] : recorder::LabelsOf(labels)) rt.labels.push_back(k + "=" + v);
    result.threads.push_back(std::move(rt));
  }
  return result;
}

}  // namespace sb::coredump
