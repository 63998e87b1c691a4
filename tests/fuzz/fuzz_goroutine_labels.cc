// Fuzz target: the goroutine label reader (ebpf/unwind/goroutine_labels.h, the code the BPF
// sampler runs) over a process image it does not control. Byte 0 picks the layout (map or
// slice), byte 1 the g.labels offset / 8; the rest is memory mapped at kBase, with g at kBase, so
// pointers in the input into [kBase, kBase + size) are followed. Checks the bounds it promises.
#include <cstring>
#include <vector>

#include "ebpf/unwind/host_unwind.h"
#include "tests/fuzz/fuzz_targets.h"

namespace sb::fuzz {
namespace {

constexpr uint64_t kBase = 0x10000;

class Image : public unwind::MemoryView {
 public:
  Image(const uint8_t* d, size_t n) : bytes_(d, d + n) {}
  bool Read(uint64_t addr, void* dst, size_t n) const override {
    if (addr < kBase || addr - kBase > bytes_.size() || n > bytes_.size() - (addr - kBase)) return false;
    std::memcpy(dst, bytes_.data() + (addr - kBase), n);
    return true;
  }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace

int FuzzGoroutineLabels(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  sb_proc_info pi{};
  pi.flags = SB_PI_GO | SB_PI_HAS_OFFSETS | ((data[0] & 1) ? SB_PI_LABELS_SLICE : SB_PI_LABELS_HMAP);
  pi.off.g_labels = static_cast<uint16_t>(data[1] * 8);
  Image img(data + 2, size - 2);
  unwind::HostUnwindInput in;
  in.info = &pi;
  in.memory = &img;
  sb_labels l = unwind::ReadLabelsOnHost(in, kBase);
  if (l.count > SB_MAX_LABELS || l.status >= SB_LABELS_MAX) __builtin_trap();
  if (l.status == SB_LABELS_OK && l.count != l.total) __builtin_trap();
  for (int i = 0; i < l.count; i++)
    if (l.l[i].key_len > SB_LABEL_KEY_LEN || l.l[i].val_len > SB_LABEL_VAL_LEN) __builtin_trap();
  return 0;
}

}  // namespace sb::fuzz

#ifdef SB_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return sb::fuzz::FuzzGoroutineLabels(data, size);
}
#endif
