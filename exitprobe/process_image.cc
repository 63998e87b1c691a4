#include "exitprobe/process_image.h"

#include <utility>

namespace sb::exitprobe {

recorder::TrackedProcess ProcessFromLoadBias(uint32_t pid, const std::string& exe, std::shared_ptr<sym::Binary> binary,
                                             std::shared_ptr<const unwinder::GoBinaryFacts> facts, uint64_t bias) {
  constexpr uint64_t kPage = 4096;
  constexpr uint32_t kPtLoad = 1, kPfX = 1, kPfW = 2, kPfR = 4;
  recorder::TrackedProcess p;
  p.pid = pid;
  p.exe = exe;
  p.bias = bias;
  p.exited = true;
  for (const auto& seg : binary->elf().segments()) {
    if (seg.type != kPtLoad || seg.memsz == 0) continue;
    unwinder::MemoryMapping m;
    uint64_t skew = seg.vaddr % kPage;  // mmap maps from the page holding the segment's start
    m.start = seg.vaddr - skew + bias;
    m.end = (seg.vaddr + seg.memsz + kPage - 1) / kPage * kPage + bias;
    m.offset = seg.offset - skew;
    m.perms = std::string(seg.flags & kPfR ? "r" : "-") + (seg.flags & kPfW ? "w" : "-") + (seg.flags & kPfX ? "x" : "-") + "p";
    m.path = exe;
    p.maps.push_back(std::move(m));
  }
  p.binary = std::move(binary);
  p.facts = std::move(facts);
  return p;
}

}  // namespace sb::exitprobe
