// The unwind core (unwind_core.h) compiled for the host, for coredump replay and unit tests.
// It runs exactly the code the BPF sampler runs; only memory reads and the pcsp array differ.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "unwind_types.h"

namespace sb::unwind {

// Read-only view of a process's memory (a core file, a synthetic image in tests).
class MemoryView {
 public:
  virtual ~MemoryView() = default;
  // Copies n bytes at addr into dst; false if any byte is unavailable.
  virtual bool Read(uint64_t addr, void* dst, size_t n) const = 0;
};

struct Registers {
  uint64_t pc = 0;
  uint64_t sp = 0;
  uint64_t fp = 0;
  uint64_t lr = 0;        // arm64 x30
  uint64_t g_reg = 0;     // arm64 x28
  uint64_t tls_base = 0;  // amd64 fs_base; arm64 TPIDR_EL0
};

struct HostUnwindInput {
  const sb_proc_info* info = nullptr;
  const std::vector<sb_sp_delta>* deltas = nullptr;  // info->delta_first indexes into this
  const MemoryView* memory = nullptr;
  // Reads touching any of these addresses fail, as if unmapped (fault injection).
  std::set<uint64_t> fault_addresses;
  bool record_reads = false;
  // The stack window (unwind_core.h): frame records read from one read of up to
  // SB_STACK_WINDOW_BYTES of their page, as the BPF sampler reads them. Off: one read per record,
  // as the exit probe reads them.
  bool stack_window = true;
};

struct HostUnwindResult {
  sb_sample sample{};
  std::set<uint64_t> faults_hit;  // the injected fault addresses that a read touched
  std::vector<uint64_t> reads;    // every address read, in order (when record_reads)
};

HostUnwindResult UnwindOnHost(const HostUnwindInput& in, const Registers& regs,
                              sb_counters* counters);

// The pprof labels of goroutine G (goroutine_labels.h, the code the BPF sampler runs), with
// in.info's g.labels offset and layout flags. FAULTS_HIT: injected faults touched.
sb_labels ReadLabelsOnHost(const HostUnwindInput& in, uint64_t g, std::set<uint64_t>* faults_hit = nullptr);

// The frame loop's function-kind test of pc (enum sb_func_kind): the span and its block bitmap
// (sb_no_special), then sb_classify's search; FROM_BITMAP: the first answered without it.
int ClassifyOnHost(const sb_proc_info& info, uint64_t pc, bool* from_bitmap = nullptr);

// The floor walk `record --compare-floor` times against the plain walk (fp_walk_baseline.h,
// the code the BPF sampler runs): the frames above the leaf a plain frame-pointer walk finds,
// and the goroutine id its identity reads found (0: none). CROSS: the crossing floor of
// `record --compare-crossing-floor` (off g's stack, curg's from its gobuf too).
struct FloorWalkResult {
  uint32_t frames = 0;
  uint64_t goid = 0;
  std::vector<uint64_t> reads;  // every address read, in order (when in.record_reads)
};
FloorWalkResult FloorWalkOnHost(const HostUnwindInput& in, const Registers& regs, bool cross = false);

const char* StopReasonName(int reason);   // "root", "bad_fp", ...
// Whether a stack that stopped for this reason is whole: it reached a root, or the base of a
// g0 stack whose goroutine has exited or, after dropg, has run elsewhere since (nothing above it
// to show: Go's own traceback of that g0 stack ends there too).
bool StopIsWhole(int reason);
const char* CrossingName(int crossing);   // "leaf", "systemstack", ...

}  // namespace sb::unwind
