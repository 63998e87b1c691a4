// trace --stacks: one ring record of the exit probe (ebpf/exitprobe.h sb_xp_stack_record: the
// function, its time and the load bias, then the call path packed as the sampler packs a sample,
// ebpf/sample_record.h) unpacked into sb_xp_stack, the form the call-path consumers take. Apart
// from the Tracer, so that a unit test and a fuzz target read records without BPF.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ebpf/exitprobe.h"

namespace sb::exitprobe {

// Fills *out (every field: it is reset first) from one record of SIZE bytes. Returns "" when the
// record is whole and exactly its counts' size, else why not (shorter than a header, a count over
// its limit, kernel frames, a size its counts do not give); *out is then reset.
std::string UnpackXpStackRecord(const void* data, size_t size, sb_xp_stack* out);

// The size of the record that holds these (what the exit probe sends).
size_t XpStackRecordSize(uint32_t nframes, uint32_t labels_count);

}  // namespace sb::exitprobe
