// Host environment of the unwind core. The C core calls sb_read / sb_delta_entry with the
// env pointer it was given; here that is a HostEnv.
#include "host_unwind.h"

#include <cstring>

namespace sb::unwind {
namespace {

struct HostEnv {
  const HostUnwindInput* in;
  std::set<uint64_t>* faults_hit;
  std::vector<uint64_t>* reads;
  // The stack window's bytes (unwind_core.h, SB_HAS_STACK_WINDOW): the BPF sampler keeps them
  // in a per-CPU map, the host in the walk's environment.
  uint8_t window[SB_STACK_WINDOW_BYTES] = {};
};

int HostRead(void* env, void* dst, sb_u32 size, sb_u64 addr) {
  auto* e = static_cast<HostEnv*>(env);
  if (e->in->record_reads) e->reads->push_back(addr);
  if (!e->in->fault_addresses.empty()) {
    auto it = e->in->fault_addresses.lower_bound(addr);
    if (it != e->in->fault_addresses.end() && *it < addr + size) {
      e->faults_hit->insert(*it);
      std::memset(dst, 0, size);
      return -1;
    }
  }
  if (e->in->memory == nullptr || !e->in->memory->Read(addr, dst, size)) {
    std::memset(dst, 0, size);
    return -1;
  }
  return 0;
}

int HostWindowFill(void* env, sb_u64 addr, sb_u32 len) {
  auto* e = static_cast<HostEnv*>(env);
  if (!e->in->stack_window || len == 0 || len > SB_STACK_WINDOW_BYTES) return -1;
  return HostRead(env, e->window, len, addr);
}

int HostWindowGet(void* env, sb_u64 off, sb_u64 rec[2]) {
  auto* e = static_cast<HostEnv*>(env);
  if (off > SB_STACK_WINDOW_BYTES - 16) return -1;
  std::memcpy(rec, e->window + off, 16);
  return 0;
}

int HostDelta(void* env, sb_u32 index, sb_sp_delta* out) {
  auto* e = static_cast<HostEnv*>(env);
  const auto* d = e->in->deltas;
  if (d == nullptr || index >= d->size()) return -1;
  *out = (*d)[index];
  return 0;
}

}  // namespace
}  // namespace sb::unwind

// The core, instantiated for the host.
#define SB_INLINE static inline
#define SB_SUBPROG static inline
static inline int sb_read(void* env, void* dst, sb_u32 size, sb_u64 addr) {
  return sb::unwind::HostRead(env, dst, size, addr);
}
#define SB_HAS_STACK_WINDOW 1
static inline int sb_window_fill(void* env, sb_u64 addr, sb_u32 len) {
  return sb::unwind::HostWindowFill(env, addr, len);
}
static inline int sb_window_get(void* env, sb_u64 off, sb_u64 rec[2]) {
  return sb::unwind::HostWindowGet(env, off, rec);
}
static inline int sb_delta_entry(void* env, sb_u32 index, struct sb_sp_delta* out) {
  return sb::unwind::HostDelta(env, index, out);
}
#define SB_LOOP(n, callback, ctx)                          \
  do {                                                     \
    for (sb_u32 sb_i = 0; sb_i < (n); sb_i++)              \
      if ((callback)(sb_i, (ctx)) != 0) break;             \
  } while (0)
#include "unwind_core.h"
#include "goroutine_labels.h"
#include "fp_walk_baseline.h"

namespace sb::unwind {

HostUnwindResult UnwindOnHost(const HostUnwindInput& in, const Registers& regs,
                              sb_counters* counters) {
  HostUnwindResult r;
  HostEnv env{&in, &r.faults_hit, &r.reads};
  sb_counters scratch{};
  sb_regs r0{regs.pc, regs.sp, regs.fp, regs.lr, regs.g_reg, regs.tls_base};
  sb_unwind(in.info, &r.sample, counters ? counters : &scratch, &env, &r0);
  return r;
}

sb_labels ReadLabelsOnHost(const HostUnwindInput& in, uint64_t g, std::set<uint64_t>* faults_hit) {
  std::set<uint64_t> faults;
  std::vector<uint64_t> reads;
  HostEnv env{&in, faults_hit ? faults_hit : &faults, &reads};
  sb_labels out{};
  sb_read_goroutine_labels(reinterpret_cast<sb_u64>(&env), in.info, g, &out);
  return out;
}

FloorWalkResult FloorWalkOnHost(const HostUnwindInput& in, const Registers& regs, bool cross) {
  FloorWalkResult out;
  std::set<uint64_t> faults;
  HostEnv env{&in, &faults, &out.reads};
  sb_regs r{regs.pc, regs.sp, regs.fp, regs.lr, regs.g_reg, regs.tls_base};
  out.frames = sb_fp_walk_floor(reinterpret_cast<sb_u64>(&env), in.info, &r, &out.goid, cross ? 1 : 0);
  return out;
}

int ClassifyOnHost(const sb_proc_info& info, uint64_t pc, bool* from_bitmap) {
  if (from_bitmap) *from_bitmap = sb_no_special(&info, pc) != 0;
  return sb_frame_kind(&info, pc);
}

const char* StopReasonName(int reason) {
  switch (reason) {
    case SB_STOP_NONE: return "none";
    case SB_STOP_ROOT: return "root";
    case SB_STOP_BAD_FP: return "bad_fp";
    case SB_STOP_READ_FAULT: return "read_fault";
    case SB_STOP_END_OF_CHAIN: return "end_of_chain";
    case SB_STOP_MAX_FRAMES: return "max_frames";
    case SB_STOP_NO_OFFSETS: return "no_offsets";
    case SB_STOP_STALE_GOROUTINE: return "stale_goroutine";
    case SB_STOP_COPYSTACK: return "copystack";
    case SB_STOP_BAD_G: return "bad_g";
    case SB_STOP_NOT_GO: return "not_go";
    case SB_STOP_GOROUTINE_EXITED: return "goroutine_exited";
    case SB_STOP_GOROUTINE_LEFT: return "goroutine_left";
  }
  return "unknown";
}

bool StopIsWhole(int reason) {
  return reason == SB_STOP_ROOT || reason == SB_STOP_GOROUTINE_EXITED || reason == SB_STOP_GOROUTINE_LEFT;
}

const char* CrossingName(int crossing) {
  switch (crossing) {
    case SB_CROSS_LEAF: return "leaf";
    case SB_CROSS_SYSTEMSTACK: return "systemstack";
    case SB_CROSS_MCALL: return "mcall";
    case SB_CROSS_MORESTACK: return "morestack";
    case SB_CROSS_VDSO: return "vdso";
    case SB_CROSS_ASMCGOCALL: return "asmcgocall";
    case SB_CROSS_SIGNAL: return "signal";
    case SB_CROSS_CGOCALLBACK: return "cgocallback";
    case SB_CROSS_ASYNCPREEMPT: return "asyncpreempt";
  }
  return "unknown";
}

}  // namespace sb::unwind
