// The benchmark modes of the BPF sampler (ebpf/sampler.bpf.c `compare_fp_walk`): what each
// sample times besides (or instead of) the unwinder, against a plain frame-pointer walk of the
// same stack (ebpf/unwind/fp_walk_baseline.h). The values are the BPF program's.
#pragma once

#include <cstdint>

namespace sb::unwinder {

enum class CompareWalk : uint8_t {
  kNone = 0,
  kFpWalk = 1,         // the unwinder against the plain walk (record --compare-fp-walk)
  kFloor = 2,          // the plain walk plus the reads naming the goroutine (--compare-floor)
  kCrossingFloor = 3,  // that floor crossing into curg from its gobuf (--compare-crossing-floor)
};

}  // namespace sb::unwinder
