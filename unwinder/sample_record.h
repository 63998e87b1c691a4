// The sampler's ring-buffer record (ebpf/sampler.h sb_sample_record: a header, then only the
// frames, exact bits, kernel frames and labels the sample holds) unpacked into sb_cpu_sample,
// the fixed form the recorder and the agent read.
#pragma once

#include <cstddef>
#include <string>

#include "ebpf/sampler.h"

namespace sb::unwinder {

// Fills *out (every field: it is reset first) from one record of SIZE bytes. Returns "" when
// the record is whole, else why not (shorter than its header or than its counts say, a count
// over its limit); *out is then reset.
std::string UnpackSampleRecord(const void* data, size_t size, sb_cpu_sample* out);

// The size of the record that holds these (what the sampler sends).
size_t SampleRecordSize(uint32_t nframes, uint32_t kernel_nframes, uint32_t labels_count);

}  // namespace sb::unwinder
