// Turns aggregated raw stacks into ProfileData: each pc resolved through the process's
// mappings to a file and link-time address, then through the pclntab (Go, with inline
// frames) or ELF symbols (C). A stack that did not reach a root gets a final pseudo-frame
// "[stopped: REASON]" on its root side.
#pragma once

#include <cstdint>
#include <functional>

#include "profile/profile_data.h"
#include "recorder/process_tracker.h"
#include "recorder/sample_aggregator.h"
#include "symbolizer/kallsyms.h"

namespace sb::recorder {

struct SymbolizeOptions {
  int64_t period_nanos = 0;
  // Called for each stack once its sample is built (locations, labels, count * period), before
  // it is added: other producers (trace --stacks) set their own values and labels here.
  std::function<void(const StackKey&, profile::Sample*)> fill;
  // Kernel frames (StackKey::kernel_frames) resolve through these into the mapping
  // "[kernel.kallsyms]", above the user stack; null: they are named by address.
  const sym::KernelSymbols* kernel = nullptr;
};

// The pprof mapping of kernel frames, as perf names it.
inline constexpr const char* kKernelMappingName = "[kernel.kallsyms]";
// The leaf-side pseudo-frame of a sample that interrupted the kernel without a kernel stack.
inline constexpr const char* kKernelStackMissing = "[kernel stack missing]";

profile::ProfileData SymbolizeStacks(const SampleAggregator& agg, ProcessTracker& tracker,
                                     const SymbolizeOptions& opts);

// "[stopped: bad_fp]"
std::string StopFrameName(int reason);
// "leaf,systemstack": the switches a sample crossed (its `switches` label).
std::string CrossedSwitches(uint16_t crossed);

}  // namespace sb::recorder
