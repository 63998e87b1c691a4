// Fuzz target: the sampler's ring record unpacker (unwinder/sample_record.h) over any bytes.
// Whatever it accepts must hold counts within their limits and a size its counts need.
#include "tests/fuzz/fuzz_targets.h"
#include "unwinder/sample_record.h"

namespace sb::fuzz {

int FuzzSampleRecord(const uint8_t* data, size_t size) {
  static sb_cpu_sample out;  // 10 KB: not on the fuzzer's stack
  if (!unwinder::UnpackSampleRecord(data, size, &out).empty()) {
    if (out.s.nframes != 0 || out.kernel.nframes != 0 || out.s.labels.count != 0) __builtin_trap();
    return 0;
  }
  if (out.s.nframes > SB_MAX_FRAMES || out.kernel.nframes > SB_MAX_KERNEL_FRAMES ||
      out.s.labels.count > SB_MAX_LABELS)
    __builtin_trap();
  if (unwinder::SampleRecordSize(out.s.nframes, out.kernel.nframes, out.s.labels.count) > size) __builtin_trap();
  for (int i = 0; i < out.s.labels.count; i++)
    if (out.s.labels.l[i].key_len > SB_LABEL_KEY_LEN || out.s.labels.l[i].val_len > SB_LABEL_VAL_LEN)
      __builtin_trap();
  return 0;
}

}  // namespace sb::fuzz

#ifdef SB_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return sb::fuzz::FuzzSampleRecord(data, size);
}
#endif
