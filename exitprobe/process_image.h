// trace --stacks: a process known only from its call paths. A process that exited before the
// first of its paths was read has no /proc/PID/maps left to symbolize them with; its
// executable's place is known anyway, exactly: every path carries the load bias its RET site
// proved (sb_xp_stack.bias), and the kernel maps the executable's PT_LOAD segments at
// vaddr + bias. Frames in other files (libc under cgo) stay unnamed addresses.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "recorder/process_tracker.h"
#include "symbolizer/binary.h"
#include "unwinder/go_binary_facts.h"

namespace sb::exitprobe {

// PID as a tracked process (marked exited) running EXE (the path its mappings name), loaded
// at BIAS: one mapping per PT_LOAD segment of the executable, page-aligned as mmap places it.
recorder::TrackedProcess ProcessFromLoadBias(uint32_t pid, const std::string& exe, std::shared_ptr<sym::Binary> binary,
                                             std::shared_ptr<const unwinder::GoBinaryFacts> facts, uint64_t bias);

}  // namespace sb::exitprobe
