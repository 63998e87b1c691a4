// Fuzz target: the exit probe's call-path record parse (exitprobe/stack_record.h) over any bytes.
// Whatever it accepts must be exactly its counts' size with counts within their limits; whatever
// it refuses must leave the output reset.
#include "exitprobe/stack_record.h"
#include "tests/fuzz/fuzz_targets.h"

namespace sb::fuzz {

int FuzzXpStackRecord(const uint8_t* data, size_t size) {
  static sb_xp_stack out;  // 10 KB: not on the fuzzer's stack
  if (!exitprobe::UnpackXpStackRecord(data, size, &out).empty()) {
    if (out.s.nframes != 0 || out.s.labels.count != 0 || out.func != 0 || out.ns != 0 || out.bias != 0)
      __builtin_trap();
    return 0;
  }
  if (out.s.nframes > SB_MAX_FRAMES || out.s.labels.count > SB_MAX_LABELS) __builtin_trap();
  if (exitprobe::XpStackRecordSize(out.s.nframes, out.s.labels.count) != size) __builtin_trap();
  for (int i = 0; i < out.s.labels.count; i++)
    if (out.s.labels.l[i].key_len > SB_LABEL_KEY_LEN || out.s.labels.l[i].val_len > SB_LABEL_VAL_LEN)
      __builtin_trap();
  if (out.s.comm[SB_COMM_LEN - 1] != '\0') __builtin_trap();
  return 0;
}

}  // namespace sb::fuzz

#ifdef SB_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return sb::fuzz::FuzzXpStackRecord(data, size);
}
#endif
