// The ring-buffer record of a stack sample (ebpf/sample_record.h sb_sample_record: a header, then
// only the frames, exact bits, kernel frames and labels the sample holds; sent by the sampler and,
// behind a header of its own, the exit probe) unpacked into sb_cpu_sample, the fixed form the
// recorder and the agent read.
#pragma once

#include <cstddef>
#include <string>

#include "ebpf/sampler.h"

namespace sb::unwinder {

// Fills *out (every field: it is reset first) from one record of SIZE bytes. Returns "" when
// the record is whole, else why not (shorter than its header or than its counts say, a count
// over its limit); *out is then reset.
std::string UnpackSampleRecord(const void* data, size_t size, sb_cpu_sample* out);

// The same into a sample and its kernel stack. kernel may be null for a program that sends no
// kernel frames (the exit probe's call paths, exitprobe/stack_record.h): a record that holds
// some is then refused, not cut.
std::string UnpackSampleRecord(const void* data, size_t size, sb_sample* s, sb_kernel_stack* kernel);

// The size of the record that holds these (what the sampler sends).
size_t SampleRecordSize(uint32_t nframes, uint32_t kernel_nframes, uint32_t labels_count);

}  // namespace sb::unwinder
