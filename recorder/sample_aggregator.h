// Counts identical raw samples (same thread, goroutine, frames and stop reason) so that
// symbolization runs once per distinct stack, not once per sample.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ebpf/sampler.h"
#include "ebpf/unwind/unwind_types.h"
#include "recorder/sample_labels.h"

namespace sb::recorder {

struct StackKey {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t goid = 0;  // 0 when unknown
  uint8_t stop_reason = 0;
  uint16_t crossed = 0;
  uint64_t exact[SB_MAX_FRAMES / 64] = {};
  std::string comm;
  std::vector<uint64_t> frames;  // leaf first
  LabelList labels;              // goroutine pprof labels, sorted by key
  uint8_t kernel_status = SB_KSTACK_OFF;  // enum sb_kstack_status
  std::vector<uint64_t> kernel_frames;    // leaf first; above (leaf side of) `frames`
  auto operator<=>(const StackKey&) const = default;
};

// Whole: the user stack reached a root (unwind::StopIsWhole) and, where the sample interrupted
// the kernel and kernel stacks were asked for, its kernel stack is there. The one rule for the
// index, the stats and the pprof's stop marker.
bool IsWhole(const StackKey& k);
bool IsWhole(const sb_cpu_sample& s);

class SampleAggregator {
 public:
  // keep_goid false: samples differing only in their goroutine are one stack (the agent's
  // default, since over a long window the goroutine id makes nearly every sample unique).
  explicit SampleAggregator(bool keep_goid = true) : keep_goid_(keep_goid) {}
  void Add(const sb_sample& s);
  void Add(const sb_cpu_sample& s);  // with its kernel stack
  // The key Add files a sample under.
  static StackKey KeyOf(const sb_sample& s, bool keep_goid = true);
  static StackKey KeyOf(const sb_cpu_sample& s, bool keep_goid = true);
  // Adds n samples of an already built key (producers that aggregate on their own).
  void AddKey(const StackKey& k, uint64_t n);
  const std::map<StackKey, uint64_t>& stacks() const { return stacks_; }
  uint64_t total() const { return total_; }
  const std::map<uint32_t, uint64_t>& per_pid() const { return per_pid_; }

 private:
  std::map<StackKey, uint64_t> stacks_;
  std::map<uint32_t, uint64_t> per_pid_;
  uint64_t total_ = 0;
  bool keep_goid_ = true;
};

}  // namespace sb::recorder
