#include "recorder/stack_symbolizer.h"
#include "base/hex.h"

#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "ebpf/unwind/host_unwind.h"

namespace sb::recorder {
namespace {

// Go's tracebacks keep a wrapper frame only when it called one of these (elideWrapperCalling).
bool IsPanicFunction(const std::string& f) {
  return f == "runtime.gopanic" || f == "runtime.sigpanic" || f == "runtime.panicwrap";
}

// Symbolizes pcs of one process, caching per (binary, address).
class ProcessSymbolizer {
 public:
  ProcessSymbolizer(ProcessTracker& tracker, profile::ProfileBuilder& builder)
      : tracker_(tracker), builder_(builder) {}

  // The location of PC, or nothing when every function at PC is a compiler-generated wrapper
  // that runtime/pprof would leave out: kept only when its callee (the inner frame, whose
  // function CALLEE names) is a panic function. *OUTER is set to PC's outermost function.
  std::optional<uint32_t> Location(TrackedProcess& p, uint64_t pc, bool exact, const std::string& callee,
                                   std::string* outer) {
    const unwinder::MemoryMapping* m = unwinder::FindMapping(p.maps, pc);
    if (m == nullptr && tracker_.RefreshMaps(p.pid)) m = unwinder::FindMapping(p.maps, pc);
    profile::Location loc;
    loc.address = pc;
    if (m == nullptr) {
      loc.lines.push_back(profile::Line{Hex(pc), "", 0});
      return builder_.AddLocation(loc);
    }
    std::shared_ptr<sym::Binary> bin = BinaryFor(p, *m);
    profile::Mapping pm;
    pm.start = m->start;
    pm.limit = m->end;
    pm.offset = m->offset;
    pm.file = m->path;
    if (bin) pm.build_id = bin->build_id();
    loc.mapping_index = builder_.AddMapping(pm);
    if (bin) {
      uint64_t link = 0;
      bool have_link = false;
      if (m->path == "[vdso]") {
        // The vDSO image is linked at its first PT_LOAD vaddr and mapped from offset 0.
        for (const auto& seg : bin->elf().segments())
          if (seg.type == 1) {
            link = pc - m->start + seg.vaddr;
            have_link = true;
            break;
          }
      } else if (auto a = unwinder::RuntimeToLinkAddress(bin->elf(), *m, pc)) {
        link = *a;
        have_link = true;
      }
      if (have_link) {
        // A return address points after the call: look up the call instruction itself.
        uint64_t lookup = exact ? link : link - 1;
        std::string inner = callee;
        auto frames = bin->Symbolize(lookup);
        for (const auto& f : frames) {
          if (!f.wrapper || IsPanicFunction(inner))
            loc.lines.push_back(profile::Line{f.function, f.file, f.line});
          inner = f.function;
        }
        if (!frames.empty()) {
          *outer = frames.back().function;
          if (loc.lines.empty()) return std::nullopt;  // wrappers only
        }
      }
    }
    if (loc.lines.empty()) {
      std::string base = m->path.substr(m->path.rfind('/') + 1);
      loc.lines.push_back(profile::Line{base + "+" + Hex(pc - m->start + m->offset), m->path, 0});
    }
    return builder_.AddLocation(loc);
  }

 private:
  std::shared_ptr<sym::Binary> BinaryFor(TrackedProcess& p, const unwinder::MemoryMapping& m) {
    auto key = std::make_tuple(p.pid, m.path);
    if (auto it = bins_.find(key); it != bins_.end()) return it->second;
    std::shared_ptr<sym::Binary> bin;
    if (m.path == "[vdso]") {
      auto v = tracker_.cache()->Vdso();
      if (v.ok()) bin = *v;
    } else if (m.path == p.exe && p.binary) {
      bin = p.binary;
    } else if (m.file_backed()) {
      auto b = tracker_.LoadFile(p, m);
      if (b.ok()) bin = *b;
    }
    // A file rewritten in place since it was loaded (cp over it) maps the new program's bytes:
    // its addresses are shown unsymbolized rather than as another program's functions.
    if (bin && !bin->Intact()) bin = nullptr;
    bins_[key] = bin;
    return bin;
  }

  ProcessTracker& tracker_;
  profile::ProfileBuilder& builder_;
  std::map<std::tuple<uint32_t, std::string>, std::shared_ptr<sym::Binary>> bins_;
};

// Kernel pcs: one mapping for the kernel and its modules (a module's name is the file of its
// functions, "[ext4]"), locations cached per pc.
class KernelSymbolizer {
 public:
  KernelSymbolizer(const sym::KernelSymbols* syms, profile::ProfileBuilder& builder)
      : syms_(syms), builder_(builder) {}

  uint32_t Location(uint64_t pc, bool exact) {
    if (auto it = cache_.find({pc, exact}); it != cache_.end()) return it->second;
    profile::Location loc;
    loc.address = pc;
    loc.mapping_index = Mapping();
    // Past the leaf, a frame is a return address: look up the call instruction.
    std::optional<sym::KernelSymbol> ks = syms_ ? syms_->Find(exact ? pc : pc - 1) : std::nullopt;
    if (ks)
      loc.lines.push_back(profile::Line{std::string(ks->name),
                                        ks->module.empty() ? "" : "[" + std::string(ks->module) + "]", 0});
    else
      loc.lines.push_back(profile::Line{Hex(pc), "", 0});
    uint32_t id = builder_.AddLocation(loc);
    cache_[{pc, exact}] = id;
    return id;
  }

  uint32_t Missing() {
    profile::Location loc;
    loc.mapping_index = Mapping();
    loc.lines.push_back(profile::Line{kKernelStackMissing, "", 0});
    return builder_.AddLocation(loc);
  }

 private:
  int Mapping() {
    if (mapping_ < 0) {
      profile::Mapping m;
      m.file = kKernelMappingName;
      m.start = syms_ ? syms_->start() : 0;
      m.limit = syms_ ? syms_->limit() : UINT64_MAX;
      mapping_ = builder_.AddMapping(m);
    }
    return mapping_;
  }

  const sym::KernelSymbols* syms_;
  profile::ProfileBuilder& builder_;
  int mapping_ = -1;
  std::map<std::pair<uint64_t, bool>, uint32_t> cache_;
};

}  // namespace

std::string CrossedSwitches(uint16_t crossed) {
  std::string out;
  for (int i = 0; i < SB_CROSS_MAX; i++) {
    if (!(crossed & (1u << i))) continue;
    if (!out.empty()) out += ",";
    out += unwind::CrossingName(i);
  }
  return out;
}

std::string StopFrameName(int reason) {
  return std::string("[stopped: ") + unwind::StopReasonName(reason) + "]";
}

profile::ProfileData SymbolizeStacks(const SampleAggregator& agg, ProcessTracker& tracker,
                                     const SymbolizeOptions& opts) {
  profile::ProfileBuilder builder;
  ProcessSymbolizer sym(tracker, builder);
  KernelSymbolizer ksym(opts.kernel, builder);
  for (const auto& [key, count] : agg.stacks()) {
    TrackedProcess* p = tracker.Find(key.pid);
    if (p == nullptr) continue;
    profile::Sample s;
    std::string callee;
    for (size_t i = 0; i < key.frames.size(); i++) {
      bool exact = (key.exact[(i >> 6) % (SB_MAX_FRAMES / 64)] >> (i & 63)) & 1;
      std::string outer;
      if (auto loc = sym.Location(*p, key.frames[i], exact, callee, &outer)) s.locations.push_back(*loc);
      callee = outer;
    }
    if (!unwind::StopIsWhole(key.stop_reason)) {  // a whole stack needs no marker
      profile::Location stop;
      stop.lines.push_back(profile::Line{StopFrameName(key.stop_reason), "", 0});
      s.locations.push_back(builder.AddLocation(stop));
    }
    // The kernel stack is the leaf side: the user stack's leaf made the syscall or took the
    // fault it shows. Symbolized after the user stack, so that the profile's first mapping is
    // the executable's (go tool pprof names the profile after it).
    if (key.kernel_status == SB_KSTACK_ERROR || !key.kernel_frames.empty()) {
      std::vector<uint32_t> kernel;
      if (key.kernel_status == SB_KSTACK_ERROR) kernel.push_back(ksym.Missing());
      for (size_t i = 0; i < key.kernel_frames.size(); i++) kernel.push_back(ksym.Location(key.kernel_frames[i], i == 0));
      s.locations.insert(s.locations.begin(), kernel.begin(), kernel.end());
    }
    s.count = static_cast<int64_t>(count);
    s.nanos = static_cast<int64_t>(count) * opts.period_nanos;
    s.num_labels["pid"] = key.pid;
    s.num_labels["tid"] = key.tid;
    if (key.goid != 0) s.num_labels["goroutine"] = static_cast<int64_t>(key.goid);
    if (!key.comm.empty()) s.labels["thread"] = key.comm;
    if (std::string sw = CrossedSwitches(key.crossed); !sw.empty()) s.labels["switches"] = sw;
    // With kernel stacks on: where the sample interrupted the thread, as the sampler saw it
    // (before it asked for the kernel stack), so that "every kernel-mode sample carries its
    // kernel stack" can be checked from the profile alone.
    if (key.kernel_status != SB_KSTACK_OFF) s.labels["cpu_mode"] = key.kernel_status == SB_KSTACK_USER ? "user" : "kernel";
    for (const auto& [k, v] : key.labels)  // goroutine pprof labels, beside switchback's own
      if (!IsReservedLabelKey(k)) s.labels.emplace(k, v);
    if (opts.fill) opts.fill(key, &s);
    builder.AddSample(std::move(s));
  }
  profile::ProfileData d = builder.Take();
  d.period_nanos = opts.period_nanos;
  return d;
}

}  // namespace sb::recorder
