#include "recorder/sample_aggregator.h"

#include <cstring>

#include "ebpf/unwind/host_unwind.h"

namespace sb::recorder {

void SampleAggregator::Add(const sb_sample& s) {
  per_pid_[s.pid]++;
  total_++;
  stacks_[KeyOf(s, keep_goid_)]++;
}

void SampleAggregator::Add(const sb_cpu_sample& s) {
  per_pid_[s.s.pid]++;
  total_++;
  stacks_[KeyOf(s, keep_goid_)]++;
}

bool IsWhole(const StackKey& k) {
  return unwind::StopIsWhole(k.stop_reason) && k.kernel_status != SB_KSTACK_ERROR;
}

bool IsWhole(const sb_cpu_sample& s) {
  return unwind::StopIsWhole(s.s.stop_reason) && s.kernel.status != SB_KSTACK_ERROR;
}

void SampleAggregator::AddKey(const StackKey& k, uint64_t n) {
  per_pid_[k.pid] += n;
  total_ += n;
  stacks_[k] += n;
}

StackKey SampleAggregator::KeyOf(const sb_sample& s, bool keep_goid) {
  StackKey k;
  k.pid = s.pid;
  k.tid = s.tid;
  k.goid = (keep_goid && (s.flags & SB_SAMPLE_HAS_GOID)) ? s.goid : 0;
  k.stop_reason = s.stop_reason;
  k.crossed = s.crossed;
  for (int i = 0; i < SB_MAX_FRAMES / 64; i++) k.exact[i] = s.exact[i];
  k.comm.assign(s.comm, strnlen(s.comm, sizeof(s.comm)));
  uint32_t n = s.nframes > SB_MAX_FRAMES ? SB_MAX_FRAMES : s.nframes;
  k.frames.assign(s.frames, s.frames + n);
  k.labels = LabelsOf(s.labels);
  return k;
}

StackKey SampleAggregator::KeyOf(const sb_cpu_sample& s, bool keep_goid) {
  StackKey k = KeyOf(s.s, keep_goid);
  k.kernel_status = s.kernel.status;
  if (s.kernel.status == SB_KSTACK_OK) {
    uint32_t n = s.kernel.nframes > SB_MAX_KERNEL_FRAMES ? SB_MAX_KERNEL_FRAMES : s.kernel.nframes;
    k.kernel_frames.assign(s.kernel.frames, s.kernel.frames + n);
  }
  return k;
}

}  // namespace sb::recorder
