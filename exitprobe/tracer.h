// The live side of exit probes: loads exitprobe.bpf.c (libbpf skeleton), hands it the plan's
// functions and runtime facts, attaches every site (one uprobe_multi link, or one perf-event
// uprobe per site on kernels before 6.6), and reads the per-function results back.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "base/result.h"
#include "ebpf/exitprobe.h"
#include "exitprobe/trace_plan.h"
#include "exitprobe/uprobe_attach.h"

struct exitprobe_bpf;
struct ring_buffer;

namespace sb::exitprobe {

struct TraceOptions {
  uint32_t pid = 0;               // 0: every process running the binary
  bool force_perf_event = false;  // skip uprobe_multi even where the kernel has it
  uint32_t max_pending = 65536;   // pending calls across all goroutines
  uint32_t max_goroutines = 16384;  // goroutines with a pending call at the same time
  // --stacks: unwind the caller's stack at each exit (at least slower_than_ns long) with the
  // shared unwind core, from these runtime facts: the binary's pcsp table (runs and bucket
  // index, GoBinaryFacts::pcsp.cells) and per-process
  // sb_proc_info (key 0: any process of a non-PIE binary).
  bool stacks = false;
  uint64_t slower_than_ns = 0;
  bool labels = true;
  std::vector<sb_sp_delta> sp_deltas;
  std::vector<std::pair<uint32_t, sb_proc_info>> procs;
  // --binary of a PIE executable: the facts at bias 0 (MakeProcInfo(facts, 0, 0)); every
  // process gets its own entry, relocated in BPF by the bias its first exit proves.
  std::optional<sb_proc_info> proc_template;
};

// Per function, summed over CPUs.
struct FuncCounts {
  uint64_t calls = 0, exits = 0, aborted = 0, dropped = 0, unmatched = 0, restarts = 0;
  uint64_t sum_ns = 0, min_ns = 0, max_ns = 0;
  std::vector<uint64_t> hist;
};

struct PendingCall {
  uint32_t func = 0;
  uint32_t tgid = 0;
  uint64_t g = 0;
  uint64_t depth = 0;
};

struct AttachReport {
  AttachMethod method = AttachMethod::kUprobeMulti;
  size_t sites = 0;
  double seconds = 0;
  std::vector<SkippedFunc> failed;  // functions that could not be attached, with the reason
};

class Tracer {
 public:
  // Loads the BPF program for `plan` (does not attach).
  static Result<std::unique_ptr<Tracer>> Load(const TracePlan& plan, const TraceOptions& opts);
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // Attaches every function of the plan (and the runtime hooks). A function that fails is
  // left out and listed with the reason; an error only when nothing could be attached.
  Result<AttachReport> Attach();
  // Detaches everything; returns the seconds it took.
  double Detach();

  std::vector<FuncCounts> ReadCounts() const;  // indexed like plan.funcs
  sb_xp_counters ReadCounters() const;
  std::vector<PendingCall> ReadPending() const;
  // --stacks: hands every call path sent since the last poll to on_stack; returns how many.
  // A record that does not unpack (exitprobe/stack_record.h) is counted, not handed on.
  using StackFn = std::function<void(const sb_xp_stack&)>;
  int PollStacks(int timeout_ms, const StackFn& on_stack);
  // --stacks: records that did not unpack, and why the first of them did not ("" when none).
  uint64_t MalformedStacks() const { return malformed_; }
  const std::string& FirstMalformedReason() const { return first_malformed_; }
  // The unwind core's counters over those unwinds (stop reasons, crossings).
  sb_counters ReadUnwindCounters() const;
  // --stacks: deletes the process-facts entries of the tgids for which gone() is true (they
  // exited); the entries the options gave are kept. Returns how many went.
  size_t ForgetProcesses(const std::function<bool(uint32_t)>& gone);
  // The verifier's work (instructions processed, limit 1M) per loaded program: the probe and,
  // with --stacks, the unwinding program.
  std::vector<std::pair<std::string, uint32_t>> VerifiedInsns() const;

  // For the benchmark: a program that does nothing, to measure the bare cost of a trap.
  bpf_program* noop_program() const;
  AttachMethod method() const { return method_; }

 private:
  Tracer() = default;
  std::vector<UprobeSite> FuncSites(uint32_t index) const;
  std::vector<UprobeSite> HookSites() const;

  const TracePlan* plan_ = nullptr;
  TraceOptions opts_;
  exitprobe_bpf* skel_ = nullptr;
  AttachMethod method_ = AttachMethod::kUprobeMulti;
  std::vector<std::unique_ptr<UprobeLinks>> links_;
  ::ring_buffer* stacks_rb_ = nullptr;
  const StackFn* cur_stack_fn_ = nullptr;
  int delivered_ = 0;
  uint64_t malformed_ = 0;
  std::string first_malformed_;
  std::unique_ptr<sb_xp_stack> stack_scratch_ = std::make_unique<sb_xp_stack>();  // ~10 KB, off the stack
};

// Says why BPF cannot be used here, or "".
std::string BpfUnavailableReason();

}  // namespace sb::exitprobe
