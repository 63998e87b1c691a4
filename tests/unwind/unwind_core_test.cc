// The unwind core (the same code the BPF sampler runs) over synthetic stack images: each
// test lays out Go stacks, g/m structs and a pcsp table in memory the way the runtime does,
// and checks the frames, the stop reason and the crossing counters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <vector>

#include "ebpf/unwind/delta_index.h"
#include "ebpf/unwind/proc_info_spans.h"
#include "ebpf/unwind/host_unwind.h"
#include "tests/unwind/byte_memory.h"

namespace sb::unwind {
namespace {

using FakeMemory = ByteMemory;

// Link layout of the fake binary's text.
constexpr uint64_t kText = 0x401000;
constexpr uint64_t kGoexit = 0x401000;       // [0x401000, 0x401020)
constexpr uint64_t kMstart = 0x401020;       // [0x401020, 0x401040)
constexpr uint64_t kSystemstack = 0x401040;  // [0x401040, 0x401080)
constexpr uint64_t kMcall = 0x401080;        // [0x401080, 0x4010c0)
constexpr uint64_t kMorestack = 0x4010c0;    // [0x4010c0, 0x401100)
constexpr uint64_t kMainF = 0x401100;        // main.f, frame 0x28: [0x401100, 0x401200)
constexpr uint64_t kLeaf = 0x401200;         // frameless leaf: [0x401200, 0x401220)
constexpr uint64_t kAllocFn = 0x401300;      // a g0 function with a frame [0x401300, 0x401400)
constexpr uint64_t kAsmcgocall = 0x401400;   // [0x401400, 0x401440)
constexpr uint64_t kAsyncPreempt = 0x401440; // [0x401440, 0x401480)
constexpr uint64_t kSigtramp = 0x401480;     // [0x401480, 0x4014c0), frame 0x60 (arm64 0xc0)
constexpr uint64_t kCgocallback = 0x4014c0;  // [0x4014c0, 0x401500), frame 0x20 (arm64 0x30)
constexpr uint64_t kCrosscall2 = 0x401700;   // [0x401700, 0x401740), frame 0x50 (arm64 0xc0)
constexpr uint64_t kSigreturn = 0x401740;    // [0x401740, 0x401760), amd64 restorer
constexpr uint64_t kSchedule = 0x401780;     // [0x401780, 0x4017c0)
constexpr uint64_t kGoexit0 = 0x4017c0;      // [0x4017c0, 0x401800)
constexpr uint64_t kSystemstackSwitch = 0x401800;  // [0x401800, 0x401820): gosave_systemstack_switch's pc
constexpr uint64_t kMorestackNoctxt = 0x401820;    // runtime.morestack_noctxt
// The save points of the saved-pc rule in main.f: kMcallRet follows a CALL runtime.mcall
// (gopark's park point), kMorestackRet the CALL runtime.morestack_noctxt of f's prologue
// (amd64; arm64: kMorestackRetArm64 after BL runtime.morestack).
constexpr uint64_t kMcallRet = kMainF + 0xa0;
constexpr uint64_t kMorestackRet = kMainF + 0x0d;
constexpr uint64_t kMorestackRetArm64 = kMainF + 0x0c;
constexpr uint64_t kTextEnd = 0x402000;

// Runtime structures.
constexpr uint64_t kFsBase = 0x7f0000001000;
constexpr uint64_t kG = 0xc000000000;     // user goroutine
constexpr uint64_t kG0 = 0xc000001000;
constexpr uint64_t kM = 0xc000002000;
constexpr uint64_t kGsignal = 0xc000003000;
constexpr uint64_t kGsignalStackLo = 0x7f0000200000, kGsignalStackHi = 0x7f0000208000;
constexpr uint64_t kGStackLo = 0xc000100000, kGStackHi = 0xc000108000;
constexpr uint64_t kG0StackLo = 0x7f0000100000, kG0StackHi = 0x7f0000110000;

sb_go_offsets Go119Offsets() {
  sb_go_offsets o{};
  o.g_stack_lo = 0; o.g_stack_hi = 8; o.g_m = 48; o.g_sched = 56;
  o.g_atomicstatus = 144; o.g_goid = 152;
  o.gobuf_sp = 0; o.gobuf_pc = 8; o.gobuf_bp = 48; o.gobuf_lr = 40;
  o.m_g0 = 0; o.m_curg = 192; o.m_gsignal = 80;
  return o;
}

class UnwindCoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    info_.flags = SB_PI_GO | SB_PI_HAS_OFFSETS | SB_PI_HAS_TLS | SB_PI_SYSTEMSTACK_SCHED;
    info_.arch = SB_ARCH_AMD64;
    info_.text_start = kText;
    info_.text_end = kTextEnd;
    info_.tls_g_offset = -8;
    info_.off = Go119Offsets();
    AddRange(kGoexit, kGoexit + 0x20, SB_FN_ROOT);
    AddRange(kMstart, kMstart + 0x20, SB_FN_ROOT);
    AddRange(kSystemstack, kSystemstack + 0x40, SB_FN_SYSTEMSTACK);
    AddRange(kMcall, kMcall + 0x40, SB_FN_MCALL);
    AddRange(kMorestack, kMorestack + 0x40, SB_FN_MORESTACK);
    AddRange(kAsmcgocall, kAsmcgocall + 0x40, SB_FN_ASMCGOCALL);
    AddRange(kAsyncPreempt, kAsyncPreempt + 0x40, SB_FN_ASYNCPREEMPT);
    AddRange(kSigtramp, kSigtramp + 0x40, SB_FN_SIGTRAMP);
    AddRange(kCgocallback, kCgocallback + 0x40, SB_FN_CGOCALLBACK);
    AddRange(kCrosscall2, kCrosscall2 + 0x40, SB_FN_CROSSCALL2);
    AddRange(kSigreturn, kSigreturn + 0x20, SB_FN_SIGRETURN);
    AddRange(kSchedule, kSchedule + 0x40, SB_FN_SCHEDULE);
    AddRange(kGoexit0, kGoexit0 + 0x40, SB_FN_GOEXIT0);
    info_.mcall_sites[info_.nmcall_sites++] = static_cast<uint32_t>(kMcallRet - kText);
    info_.morestack = kMorestack;
    info_.morestack_noctxt = kMorestackNoctxt;
    info_.sswitch_start = kSystemstackSwitch;
    info_.sswitch_end = kSystemstackSwitch + 0x20;
    // f's prologue calls morestack_noctxt (amd64 CALL rel32, 5 bytes) / morestack (arm64 BL).
    uint64_t call = kMorestackRet - 5;
    mem_.PutBytes(call, {0xE8});
    mem_.Put32(call + 1, static_cast<uint32_t>(kMorestackNoctxt - kMorestackRet));
    // pcsp runs (sorted): every function starts at delta 0; main.f pushes BP at +4 and
    // allocates its frame at +5; the alloc function likewise. sigtramp, cgocallback and
    // crosscall2 have their frames from +4.
    deltas_ = {{0x000, 0}, {0x104, 8}, {0x105, 0x28}, {0x1f0, 8}, {0x1f1, 0},
               {0x200, 0}, {0x304, 8}, {0x305, 0x40}, {0x3f0, 0}, {0x484, 0x60}, {0x4bc, 0},
               {0x4c4, 0x20}, {0x4fc, 0}, {0x704, 0x50}, {0x73c, 0}};
    info_.delta_first = 0;
    info_.delta_count = static_cast<uint32_t>(deltas_.size());
    // A user goroutine running on m, g0 idle.
    mem_.Put64(kG + 0, kGStackLo);
    mem_.Put64(kG + 8, kGStackHi);
    mem_.Put64(kG + 48, kM);
    mem_.Put64(kG + 152, 42);  // goid
    mem_.Put64(kG0 + 0, kG0StackLo);
    mem_.Put64(kG0 + 8, kG0StackHi);
    mem_.Put64(kG0 + 48, kM);
    mem_.Put64(kM + 0, kG0);
    mem_.Put64(kM + 192, kG);
    mem_.Put64(kM + 80, kGsignal);
    mem_.Put64(kGsignal + 0, kGsignalStackLo);
    mem_.Put64(kGsignal + 8, kGsignalStackHi);
    mem_.Put64(kGsignal + 48, kM);
  }

  void AddRange(uint64_t s, uint64_t e, sb_func_kind k) {
    info_.ranges[info_.nranges++] = sb_range{s, e, static_cast<uint32_t>(k), 0};
  }
  void SetCurrentG(uint64_t g) { mem_.Put64(kFsBase - 8, g); }
  // g.sched (at 56): the saved sp, pc and frame pointer of a goroutine that is not running.
  void SetSched(uint64_t g, uint64_t sp, uint64_t pc, uint64_t bp) {
    mem_.Put64(g + 56 + 0, sp);
    mem_.Put64(g + 56 + 8, pc);
    mem_.Put64(g + 56 + 48, bp);
  }
  // Samples a g0 stack alloc fn -> schedule -> mcall whose g0 slot (amd64: g0.sched.sp - 8)
  // names kG, parked in main.f under goexit. Callers set m.curg and kG.m first.
  HostUnwindResult RunUnderScheduleWithSlotG() {
    uint64_t g0_sched_sp = kG0StackHi - 0x40;
    mem_.Put64(kG0 + 56, g0_sched_sp);
    mem_.Put64(g0_sched_sp - 8, kG);
    uint64_t g0_fp = kG0StackHi - 0x100, sched_fp = kG0StackHi - 0x80;
    Frame(g0_fp, sched_fp, kSchedule + 0x20);
    Frame(sched_fp, 0, kMcall + 0x20);
    uint64_t f_fp = kGStackHi - 0x200;
    SetSched(kG, kGStackHi - 0x300, kMcallRet, f_fp);
    Frame(f_fp, 0, kGoexit + 1);
    return Run(kAllocFn + 0x10, g0_fp - 0x38, g0_fp);
  }
  // A frame-pointer frame record at fp: saved fp and return address.
  void Frame(uint64_t fp, uint64_t saved_fp, uint64_t ret) {
    mem_.Put64(fp, saved_fp);
    mem_.Put64(fp + 8, ret);
  }
  // What MakeProcInfo and AnalyzeGoBinary derive: the ranges ascending by start and the spans
  // (sb_classify, sb_outside_special, the windows), the pcsp table with its bucket index (off:
  // the whole-table search; index_shift_: buckets of that size instead of the natural ones).
  HostUnwindInput Prepare() {
    SetProcInfoSpans(&info_);
    table_ = BuildPcspTable(deltas_, kTextEnd - kText, index_shift_);
    if (!use_delta_index_) table_.buckets = 0;
    SetPcspIndex(&info_, table_);
    HostUnwindInput in;
    in.info = &info_;
    in.deltas = &table_.cells;
    return in;
  }
  HostUnwindResult Run(uint64_t pc, uint64_t sp, uint64_t fp, uint64_t lr = 0, uint64_t g_reg = 0) {
    HostUnwindInput in = Prepare();
    in.memory = &mem_;
    in.fault_addresses = faults_;
    Registers r;
    r.pc = pc; r.sp = sp; r.fp = fp; r.lr = lr; r.g_reg = g_reg;
    r.tls_base = info_.arch == SB_ARCH_ARM64 ? arm64_tpidr_ : kFsBase;
    // Every walk twice: with the stack window (the sampler's reads) and without (one read per
    // record, the exit probe's): the window may change what is read, never what is found.
    in.stack_window = !stack_window_;
    sb_counters other_counters{};
    HostUnwindResult other = UnwindOnHost(in, r, &other_counters);
    in.stack_window = stack_window_;
    HostUnwindResult result = UnwindOnHost(in, r, &counters_);
    EXPECT_EQ(Frames(other), Frames(result)) << "the stack window changed the frames";
    EXPECT_EQ(other.sample.stop_reason, result.sample.stop_reason) << "the stack window changed the stop";
    EXPECT_EQ(other.sample.crossed, result.sample.crossed) << "the stack window changed the crossings";
    EXPECT_EQ(other.sample.goid, result.sample.goid) << "the stack window changed the goroutine";
    return result;
  }
  static std::vector<uint64_t> Frames(const HostUnwindResult& r) {
    return std::vector<uint64_t>(r.sample.frames, r.sample.frames + r.sample.nframes);
  }

  sb_proc_info info_{};
  std::vector<sb_sp_delta> deltas_;
  PcspTable table_;
  bool use_delta_index_ = true;
  bool stack_window_ = true;  // Run's result with the stack window (the other run compared to it)
  uint32_t index_shift_ = 0;
  FakeMemory mem_;
  std::set<uint64_t> faults_;
  sb_counters counters_{};
  uint64_t arm64_tpidr_ = 0;  // arm64 TPIDR_EL0 given to the unwinder (0: none)
};

// Goroutine stack: main.f (sampled mid-body) called from main.f called from goexit.
TEST_F(UnwindCoreTest, FramePointerChainEndsAtGoexit) {
  SetCurrentG(kG);
  uint64_t fp0 = kGStackHi - 0x100, fp1 = kGStackHi - 0x80;
  uint64_t sp0 = fp0 - 0x20;
  Frame(fp0, fp1, kMainF + 0x50);  // returns into the outer main.f
  Frame(fp1, 0, kGoexit + 1);
  mem_.Put64(fp0 + 8, kMainF + 0x50);
  auto r = Run(kMainF + 0x30, sp0, fp0);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kMainF + 0x30, kMainF + 0x50, kGoexit + 1}));
  EXPECT_EQ(r.sample.goid, 42u);
  EXPECT_EQ(r.sample.exact[0], 1u);  // only the leaf pc is exact
  EXPECT_EQ(counters_.crossing[SB_CROSS_LEAF][SB_CNT_CROSSED], 0u);
}

// A frameless leaf: BP still belongs to the caller, the caller's pc is at [SP]. A pure
// frame-pointer walk would go straight from the leaf to the caller's caller.
TEST_F(UnwindCoreTest, FramelessLeafKeepsItsCaller) {
  SetCurrentG(kG);
  uint64_t caller_fp = kGStackHi - 0x100;
  uint64_t sp = caller_fp - 0x28;  // caller's frame below its saved BP, then the call's ret slot
  mem_.Put64(sp, kMainF + 0x60);   // return address into main.f
  Frame(caller_fp, 0, kGoexit + 1);
  auto r = Run(kLeaf + 4, sp, caller_fp);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kLeaf + 4, kMainF + 0x60, kGoexit + 1}));
  EXPECT_EQ(counters_.crossing[SB_CROSS_LEAF][SB_CNT_CROSSED], 1u);
  EXPECT_TRUE(r.sample.crossed & (1u << SB_CROSS_LEAF));
}

// amd64 runtime.clone after its SYSCALL (the code both threads run, unwinder/clone_child.h).
// The new thread: SP at its empty g0 stack top (nothing readable there) and the TLS g of its
// new m still 0: whole, clone alone. The parent at the same pc, its TLS g its own, walks on to
// its caller.
constexpr uint64_t kClone = 0x401600;  // frameless asm: [0x401600, 0x401640), pcsp 0
TEST_F(UnwindCoreTest, CloneChildBeforeItsFirstInstructionIsWhole) {
  info_.clone_shared_lo = kClone + 0x10;
  info_.clone_shared_hi = kClone + 0x1b;
  SetCurrentG(0);
  auto r = Run(kClone + 0x10, kG0StackHi, 0);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kClone + 0x10}));
  // Without the decoded range the same sample stops where its caller is unreadable.
  info_.clone_shared_hi = 0;
  auto before = Run(kClone + 0x10, kG0StackHi, 0);
  EXPECT_EQ(before.sample.stop_reason, SB_STOP_READ_FAULT);
}

TEST_F(UnwindCoreTest, CloneParentAtTheSharedPcWalksToItsCaller) {
  info_.clone_shared_lo = kClone + 0x10;
  info_.clone_shared_hi = kClone + 0x1b;
  SetCurrentG(kG);
  uint64_t caller_fp = kGStackHi - 0x100, sp = caller_fp - 0x28;
  mem_.Put64(sp, kMainF + 0x60);
  Frame(caller_fp, 0, kGoexit + 1);
  auto r = Run(kClone + 0x14, sp, caller_fp);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kClone + 0x14, kMainF + 0x60, kGoexit + 1}));
  // A TLS g that cannot be read is no proof of the child either.
  SetCurrentG(kG);
  faults_.insert(kFsBase - 8);
  auto unread = Run(kClone + 0x14, sp, caller_fp);
  EXPECT_EQ(Frames(unread).size(), 3u);
}

// The pcsp bucket index (the runs between a bucket's two index entries searched instead of
// all) finds exactly what the whole-table search finds: a sample at every pc of the text, with
// and without it, with the natural buckets (256 bytes: several runs each) and with 16-byte ones.
TEST_F(UnwindCoreTest, PcspBucketIndexAgreesWithTheWholeSearchAtEveryPc) {
  SetCurrentG(kG);
  uint64_t caller_fp = kGStackHi - 0x100;
  uint64_t sp = caller_fp - 0x28;
  for (uint64_t a = sp; a < kGStackHi; a += 8) mem_.Put64(a, kMainF + 0x60);
  Frame(caller_fp, 0, kGoexit + 1);
  EXPECT_EQ(BuildPcspTable(deltas_, kTextEnd - kText).shift, 8u);  // 4 KiB, 15 runs: 16 buckets
  for (uint32_t shift : {0u, 4u}) {
    index_shift_ = shift;
    int with_frames = 0;
    for (uint64_t pc = kText; pc < kTextEnd; pc++) {
      use_delta_index_ = true;
      auto indexed = Run(pc, sp, caller_fp);
      ASSERT_GT(info_.delta_buckets, 0u);
      use_delta_index_ = false;
      auto whole = Run(pc, sp, caller_fp);
      ASSERT_EQ(Frames(indexed), Frames(whole)) << std::hex << pc << " shift " << std::dec << shift;
      ASSERT_EQ(indexed.sample.stop_reason, whole.sample.stop_reason) << std::hex << pc;
      with_frames += indexed.sample.nframes > 1;
    }
    EXPECT_GT(with_frames, 1000);  // the walks went somewhere
  }
}

// Go 1.19 amd64: main.f -> gcWriteBarrierDX (no frame: XCHGQ, CALL, XCHGQ, RET) -> gcWriteBarrier
// (a frame). The callee's frame record links to main.f's caller's record... to main.f's own
// record, skipping the return address into main.f that the wrapper's CALL pushed: the frame-
// pointer walk loses main.f. Known as a frameless caller, the wrapper is stepped out of by SP.
TEST_F(UnwindCoreTest, FramelessCallerKeepsItsCaller) {
  constexpr uint64_t kWrapper = kText + 0x240;  // [+0x240, +0x260): pcsp 0 throughout
  SetCurrentG(kG);
  uint64_t f_fp = kGStackHi - 0x100;  // main.f's frame record (E - 8, E its entry SP)
  Frame(f_fp, 0, kGoexit + 1);
  mem_.Put64(f_fp - 0x28, kMainF + 0x60);     // the wrapper's return address into main.f
  uint64_t c_fp = f_fp - 0x38;                // the callee (alloc fn, frame 0x40) pushed BP = f_fp
  Frame(c_fp, f_fp, kWrapper + 5);
  uint64_t c_sp = f_fp - 0x70;
  auto lost = Run(kAllocFn + 0x10, c_sp, c_fp);
  EXPECT_EQ(Frames(lost), (std::vector<uint64_t>{kAllocFn + 0x10, kWrapper + 5, kGoexit + 1}))
      << "without the range the frame-pointer walk loses main.f";
  AddRange(kWrapper, kWrapper + 0x20, SB_FN_FRAMELESS_CALLER);
  auto r = Run(kAllocFn + 0x10, c_sp, c_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x10, kWrapper + 5, kMainF + 0x60, kGoexit + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  // Sampled in the wrapper itself (its pcsp 0): its return address at SP, as for any leaf.
  auto in_wrapper = Run(kWrapper + 0x10, f_fp - 0x28, f_fp);
  EXPECT_EQ(Frames(in_wrapper), (std::vector<uint64_t>{kWrapper + 0x10, kMainF + 0x60, kGoexit + 1}));
}

// Sampled in main.f's prologue right after PUSHQ BP (delta 8, BP not yet moved).
TEST_F(UnwindCoreTest, PrologueAfterPushUsesPcsp) {
  SetCurrentG(kG);
  uint64_t caller_fp = kGStackHi - 0x100;
  uint64_t sp = kGStackHi - 0x200;
  mem_.Put64(sp, caller_fp);            // pushed BP
  mem_.Put64(sp + 8, kMainF + 0x70);    // return address into the caller (another main.f)
  Frame(caller_fp, 0, kGoexit + 1);
  auto r = Run(kMainF + 4, sp, caller_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kMainF + 4, kMainF + 0x70, kGoexit + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
}

// Go 1.19 amd64 systemstack: sampled in a g0 function called by systemstack on behalf of
// main.f; main.f's return address is only in curg.sched.sp.
TEST_F(UnwindCoreTest, SystemstackInsertsTheCallerFromSched) {
  SetCurrentG(kG0);
  uint64_t g0_fp = kG0StackHi - 0x100;
  uint64_t sched_sp = kGStackHi - 0x300;    // points at systemstack's return address into F
  uint64_t f_fp = kGStackHi - 0x200;        // F's frame record
  Frame(g0_fp, f_fp, kSystemstack + 0x30);  // alloc fn returns into systemstack
  mem_.Put64(sched_sp, kMainF + 0x90);      // F = main.f
  Frame(f_fp, 0, kGoexit + 1);
  SetSched(kG, sched_sp, kSystemstackSwitch, f_fp);  // gosave_systemstack_switch's pc
  auto r = Run(kAllocFn + 0x50, g0_fp - 0x38, g0_fp);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x50, kSystemstack + 0x30, kMainF + 0x90,
                                              kGoexit + 1}));
  EXPECT_EQ(r.sample.goid, 42u);  // the goroutine that asked for the work
  EXPECT_TRUE(r.sample.flags & SB_SAMPLE_ON_G0);
  EXPECT_EQ(counters_.crossing[SB_CROSS_SYSTEMSTACK][SB_CNT_CROSSED], 1u);
}

// cgo, Go 1.19: C frames with frame pointers on g0 return into asmcgocall, which saved its
// caller (runtime.cgocall) the way systemstack does.
TEST_F(UnwindCoreTest, AsmcgocallCrossesFromCFramesToTheGoroutine) {
  SetCurrentG(kG0);
  uint64_t c_fp0 = kG0StackHi - 0x200, c_fp1 = kG0StackHi - 0x100;
  uint64_t sched_sp = kGStackHi - 0x300, f_fp = sched_sp + 0x28;  // main.f +0x90: delta 0x28
  Frame(c_fp0, c_fp1, 0x7f0000005010);          // C leaf's frame: returns into its C caller
  Frame(c_fp1, f_fp, kAsmcgocall + 0x30);       // C caller returns into asmcgocall
  mem_.Put64(sched_sp, kMainF + 0x90);           // asmcgocall's return address into cgocall
  mem_.Put64(kG + 56 + 8, kSystemstackSwitch);   // sched.pc: gosave_systemstack_switch's marker
  mem_.Put64(kG + 56 + 0, sched_sp);
  mem_.Put64(kG + 56 + 48, f_fp);
  Frame(f_fp, 0, kGoexit + 1);
  auto r = Run(0x7f0000005000, c_fp0 - 0x10, c_fp0);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{0x7f0000005000, 0x7f0000005010, kAsmcgocall + 0x30,
                                              kMainF + 0x90, kGoexit + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(counters_.crossing[SB_CROSS_ASMCGOCALL][SB_CNT_CROSSED], 1u);
}

// Go 1.19 during a cgo callback: curg.sched.bp is 0; F's frame pointer is found from its pcsp
// (right below its return address).
TEST_F(UnwindCoreTest, AsmcgocallWithZeroSchedBpUsesTheCallersPcsp) {
  SetCurrentG(kG0);
  uint64_t c_fp = kG0StackHi - 0x200;
  uint64_t sched_sp = kGStackHi - 0x300;
  uint64_t f_fp = sched_sp + 0x28;               // main.f at +0x90: delta 0x28 -> BP slot
  Frame(c_fp, 0, kAsmcgocall + 0x30);
  mem_.Put64(sched_sp, kMainF + 0x90);
  Frame(f_fp, 0, kGoexit + 1);
  SetSched(kG, sched_sp, kSystemstackSwitch, 0);
  auto r = Run(0x7f0000005000, c_fp - 0x10, c_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{0x7f0000005000, kAsmcgocall + 0x30, kMainF + 0x90, kGoexit + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
}

// Go 1.19-1.20 between two callbacks of one C call: cgocallback restored sched.pc and sched.sp,
// and sched.bp is still the frame pointer of the last systemstack a callback called. F's frame
// pointer comes from F's pcsp, never from that (the walk from it repeated callback frames).
TEST_F(UnwindCoreTest, AsmcgocallIgnoresAStaleSchedBp) {
  SetCurrentG(kG0);
  uint64_t c_fp = kG0StackHi - 0x200;
  uint64_t sched_sp = kGStackHi - 0x300, f_fp = sched_sp + 0x28;
  uint64_t stale = kGStackHi - 0x600;             // a callback frame's record, since returned
  Frame(c_fp, 0, kAsmcgocall + 0x30);
  mem_.Put64(sched_sp, kMainF + 0x90);
  Frame(f_fp, 0, kGoexit + 1);
  Frame(stale, f_fp, kCgocallback + 0x20);
  SetSched(kG, sched_sp, kSystemstackSwitch, stale);
  auto r = Run(0x7f0000005000, c_fp - 0x10, c_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{0x7f0000005000, kAsmcgocall + 0x30, kMainF + 0x90, kGoexit + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
}

// Async preemption: the signal handler made the interrupted function "call" asyncPreempt at
// the interrupted pc. Above asyncPreempt's frame record is that exact pc, and the interrupted
// function here is a frameless leaf: its caller comes from the pcsp rule, not the chain.
TEST_F(UnwindCoreTest, AsyncPreemptedLeafKeepsItsCaller) {
  SetCurrentG(kG);
  uint64_t ap_fp = kGStackHi - 0x400;               // asyncPreempt's frame record
  uint64_t leaf_sp = ap_fp + 16;                     // the interrupted leaf's SP
  uint64_t caller_fp = kGStackHi - 0x100;
  Frame(ap_fp, caller_fp, kLeaf);                    // injected "return address": leaf's entry
  mem_.Put64(leaf_sp, kMainF + 0x60);                // the leaf's real return address
  Frame(caller_fp, 0, kGoexit + 1);
  uint64_t fn_fp = ap_fp - 0x100;                    // asyncPreempt2, sampled mid-body
  Frame(fn_fp, ap_fp, kAsyncPreempt + 0x20);
  auto r = Run(kAllocFn + 0x50, fn_fp - 0x38, fn_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x50, kAsyncPreempt + 0x20, kLeaf, kMainF + 0x60,
                                              kGoexit + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(r.sample.exact[0], 0b101u);  // the leaf's pc is exact: symbolized without -1
}

// Without the curg.sched recipe (Go 1.21+ amd64) the frame chain crosses by itself.
TEST_F(UnwindCoreTest, SystemstackByFramePointersOnNewerGo) {
  info_.flags &= ~SB_PI_SYSTEMSTACK_SCHED;
  SetCurrentG(kG0);
  uint64_t g0_fp = kG0StackHi - 0x100, ss_fp = kG0StackHi - 0x80;
  uint64_t f_fp = kGStackHi - 0x200;
  Frame(g0_fp, ss_fp, kSystemstack + 0x30);
  Frame(ss_fp, f_fp, kMainF + 0x90);  // systemstack's own frame record links to F
  Frame(f_fp, 0, kGoexit + 1);
  auto r = Run(kAllocFn + 0x50, g0_fp - 0x38, g0_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x50, kSystemstack + 0x30, kMainF + 0x90,
                                              kGoexit + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(counters_.crossing[SB_CROSS_SYSTEMSTACK][SB_CNT_CROSSED], 1u);
}

// Go 1.21+ as seen in real Go 1.27 cores: the g0 function's saved BP is the goroutine's frame
// pointer itself, at a lower address than the g0 frames: the step that leaves g0 must not be
// held to the "frame pointers move up" rule.
TEST_F(UnwindCoreTest, NewerGoChainLeavesG0ForALowerAddress) {
  info_.flags &= ~SB_PI_SYSTEMSTACK_SCHED;
  SetCurrentG(kG0);
  uint64_t g0_fp = kG0StackHi - 0x100, g0_fp2 = kG0StackHi - 0x80;
  uint64_t f_fp = kGStackHi - 0x200;  // 0xc0..., far below the g0 stack at 0x7f...
  Frame(g0_fp, g0_fp2, kAllocFn + 0x80);
  Frame(g0_fp2, f_fp, kSystemstack + 0x30);
  Frame(f_fp, 0, kGoexit + 1);
  auto r = Run(kAllocFn + 0x50, g0_fp - 0x38, g0_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x50, kAllocFn + 0x80, kSystemstack + 0x30, kGoexit + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
}

// A systemstack called on g0 takes its direct path (noswitch: pops BP and tail-calls fn) and
// never switches: sampled there, it is one more g0 frame, and the walk crosses only at the
// outer systemstack, in its switched path (seen live: gcDrainN -> wbBufFlush -> systemstack on
// Go 1.23 and gfget -> systemstack on 1.27 ended with bad_fp, crossed at the leaf).
TEST_F(UnwindCoreTest, SystemstackCalledOnG0IsAnOrdinaryFrame) {
  info_.flags &= ~SB_PI_SYSTEMSTACK_SCHED;
  info_.sstack_switched_lo = static_cast<uint32_t>(kSystemstack + 0x10 - kText);
  info_.sstack_direct_lo = static_cast<uint32_t>(kSystemstack + 0x38 - kText);
  SetCurrentG(kG0);
  uint64_t leaf_sp = kG0StackHi - 0x180, g0_fp = kG0StackHi - 0x100, ss_fp = kG0StackHi - 0x80;
  uint64_t f_fp = kGStackHi - 0x200;
  mem_.Put64(leaf_sp, kAllocFn + 0x80);       // noswitch popped BP: the return address at SP
  Frame(g0_fp, ss_fp, kSystemstack + 0x30);   // the alloc fn, called by the outer systemstack
  Frame(ss_fp, f_fp, kMainF + 0x90);          // which switched from F (Go 1.21+ chain)
  Frame(f_fp, 0, kGoexit + 1);
  auto r = Run(kSystemstack + 0x3a, leaf_sp, g0_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kSystemstack + 0x3a, kAllocFn + 0x80, kSystemstack + 0x30,
                                              kMainF + 0x90, kGoexit + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(counters_.crossing[SB_CROSS_SYSTEMSTACK][SB_CNT_CROSSED], 1u);
  EXPECT_EQ(counters_.crossing[SB_CROSS_SYSTEMSTACK][SB_CNT_ATTEMPTS], 1u);
  // Before the switch (the tests of g at its entry) on g0 it is the same nested call.
  counters_ = sb_counters{};
  auto entry = Run(kSystemstack + 0x4, leaf_sp, g0_fp);
  EXPECT_EQ(entry.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(Frames(entry)[1], kAllocFn + 0x80);
  // Without the decoded paths every pc of systemstack on g0 is crossed: the leaf's crossing
  // loses track of the g0 stack (what the live recordings showed).
  info_.sstack_direct_lo = 0;
  EXPECT_EQ(Run(kSystemstack + 0x3a, leaf_sp, g0_fp).sample.stop_reason, SB_STOP_BAD_FP);
}

// asmcgocall called on g0 (newm1's _cgo_thread_start, cgoSigaction) takes its direct path
// (nosave) and calls C on g0: the goroutine m.curg names did not ask for that C call, so it is
// not attached. amd64's asmcgocall has no frame record: without its saved entry SP decoded the
// frame-pointer step from it skips its Go caller (here A) and goes on with A's caller, on g0.
TEST_F(UnwindCoreTest, AsmcgocallCalledOnG0IsNotCrossed) {
  info_.acgo_switched_lo = static_cast<uint32_t>(kAsmcgocall + 0x10 - kText);
  info_.acgo_direct_lo = static_cast<uint32_t>(kAsmcgocall + 0x34 - kText);
  SetCurrentG(kG0);
  uint64_t c_fp = kG0StackHi - 0x200, a_fp = kG0StackHi - 0x100;
  uint64_t sched_sp = kGStackHi - 0x300, f_fp = sched_sp + 0x28;
  Frame(c_fp, a_fp, kAsmcgocall + 0x38);  // C returns into asmcgocall's nosave path
  Frame(a_fp, 0, kMstart + 1);            // A's frame record: A's caller is the g0 root
  // curg is a parked-looking goroutine with systemstack_switch's save: what the crossing used
  // to attach.
  mem_.Put64(sched_sp, kMainF + 0x90);
  SetSched(kG, sched_sp, kSystemstackSwitch, f_fp);
  Frame(f_fp, 0, kGoexit + 1);
  auto r = Run(0x7f0000005000, c_fp - 0x10, c_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{0x7f0000005000, kAsmcgocall + 0x38, kMstart + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(counters_.crossing[SB_CROSS_ASMCGOCALL][SB_CNT_ATTEMPTS], 0u);
  // Its switched path's call is still crossed.
  Frame(c_fp, a_fp, kAsmcgocall + 0x30);
  auto sw = Run(0x7f0000005000, c_fp - 0x10, c_fp);
  EXPECT_EQ(Frames(sw), (std::vector<uint64_t>{0x7f0000005000, kAsmcgocall + 0x30, kMainF + 0x90, kGoexit + 1}));
  EXPECT_EQ(counters_.crossing[SB_CROSS_ASMCGOCALL][SB_CNT_CROSSED], 1u);
}

// The same with the direct path's saved entry SP decoded (Go 1.19: `MOVQ SP, DX` at entry,
// `MOVQ DX, 40(SP)` after aligning SP): the return address into A sits at that entry SP, and
// A is kept.
TEST_F(UnwindCoreTest, AsmcgocallDirectPathKeepsItsGoCaller) {
  info_.acgo_switched_lo = static_cast<uint32_t>(kAsmcgocall + 0x10 - kText);
  info_.acgo_direct_lo = static_cast<uint32_t>(kAsmcgocall + 0x34 - kText);
  info_.acgo_entry_sp_slot = 40 + 1;
  SetCurrentG(kG0);
  uint64_t c_fp = kG0StackHi - 0x200, a_fp = kG0StackHi - 0x100;
  uint64_t aligned_sp = c_fp + 16, entry_sp = aligned_sp + 0x48;
  Frame(c_fp, a_fp, kAsmcgocall + 0x38);      // C returns into asmcgocall's nosave path
  mem_.Put64(aligned_sp + 40, entry_sp);      // MOVQ DX, 40(SP)
  mem_.Put64(entry_sp, kAllocFn + 0x80);      // asmcgocall's return address into A
  Frame(a_fp, 0, kMstart + 1);
  auto r = Run(0x7f0000005000, c_fp - 0x10, c_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{0x7f0000005000, kAsmcgocall + 0x38, kAllocFn + 0x80, kMstart + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  // A saved SP that is no plausible entry SP (below the frame, or a return address outside Go
  // text) is not followed: the frame-pointer step, as without the slot.
  mem_.Put64(aligned_sp + 40, aligned_sp - 0x100);
  EXPECT_EQ(Frames(Run(0x7f0000005000, c_fp - 0x10, c_fp)),
            (std::vector<uint64_t>{0x7f0000005000, kAsmcgocall + 0x38, kMstart + 1}));
  mem_.Put64(aligned_sp + 40, entry_sp);
  mem_.Put64(entry_sp, 0x7f0000009000);
  EXPECT_EQ(Frames(Run(0x7f0000005000, c_fp - 0x10, c_fp)),
            (std::vector<uint64_t>{0x7f0000005000, kAsmcgocall + 0x38, kMstart + 1}));
}

// mcall with m.curg still set: continue from curg.sched.
TEST_F(UnwindCoreTest, McallWithCurg) {
  SetCurrentG(kG0);
  uint64_t g0_fp = kG0StackHi - 0x100;
  uint64_t f_fp = kGStackHi - 0x200;
  Frame(g0_fp, 0, kMcall + 0x20);
  SetSched(kG, kGStackHi - 0x300, kMcallRet, f_fp);
  Frame(f_fp, 0, kGoexit + 1);
  auto r = Run(kAllocFn + 0x10, g0_fp - 0x38, g0_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x10, kMcall + 0x20, kMcallRet, kGoexit + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(counters_.crossing[SB_CROSS_MCALL][SB_CNT_CROSSED], 1u);
}

// A g's header (g.m, g.sched, atomicstatus, goid) is read in one read when all of it
// is readable (sb_ghdr_read), and field by field when it is not (the fixture's sparse memory):
// the same frames, stop, goroutine and crossings either way, with fewer reads.
struct UnwindOutcome {
  std::vector<uint64_t> frames;
  int stop;
  uint64_t goid;
  uint32_t crossed;
  bool operator==(const UnwindOutcome&) const = default;
};

class GHeaderTest : public UnwindCoreTest {
 protected:
  static constexpr uint64_t kNextG = 0xc000004000;
  UnwindOutcome Outcome(const HostUnwindResult& r) {
    return {Frames(r), r.sample.stop_reason, r.sample.goid, r.sample.crossed};
  }
  // Runs `scenario` with sparse g's, then with every g's header bytes all readable.
  void ExpectSameBothWays(const std::function<HostUnwindResult()>& scenario) {
    mem_.reads = 0;
    UnwindOutcome sparse = Outcome(scenario());
    int sparse_reads = mem_.reads;
    for (uint64_t g : {kG, kG0, kGsignal, kNextG}) mem_.FillAbsent(g, 176);  // SB_GHDR_BYTES
    counters_ = {};
    mem_.reads = 0;
    UnwindOutcome whole = Outcome(scenario());
    EXPECT_EQ(whole, sparse);
    EXPECT_LT(mem_.reads, sparse_reads);
  }
};

TEST_F(GHeaderTest, UserGoroutine) {
  SetCurrentG(kG);
  uint64_t fp0 = kGStackHi - 0x100, fp1 = kGStackHi - 0x80;
  Frame(fp0, fp1, kMainF + 0x50);
  Frame(fp1, 0, kGoexit + 1);
  ExpectSameBothWays([&] { return Run(kMainF + 0x30, fp0 - 0x20, fp0); });
  EXPECT_EQ(counters_.stop[SB_STOP_ROOT], 1u);
}

TEST_F(GHeaderTest, McallWithCurg) {
  SetCurrentG(kG0);
  uint64_t g0_fp = kG0StackHi - 0x100, f_fp = kGStackHi - 0x200;
  Frame(g0_fp, 0, kMcall + 0x20);
  SetSched(kG, kGStackHi - 0x300, kMcallRet, f_fp);
  Frame(f_fp, 0, kGoexit + 1);
  ExpectSameBothWays([&] { return Run(kAllocFn + 0x10, g0_fp - 0x38, g0_fp); });
  EXPECT_EQ(counters_.crossing[SB_CROSS_MCALL][SB_CNT_CROSSED], 1u);
}

TEST_F(GHeaderTest, McallUnderScheduleWithTheNextCurg) {
  SetCurrentG(kG0);
  mem_.Put64(kM + 192, kNextG);
  mem_.Put64(kNextG + 0, kGStackLo);
  mem_.Put64(kNextG + 8, kGStackHi);
  mem_.Put64(kNextG + 48, kM);
  mem_.Put64(kNextG + 152, 77);
  mem_.Put64(kG + 48, 0);
  ExpectSameBothWays([&] { return RunUnderScheduleWithSlotG(); });
  EXPECT_EQ(counters_.stop[SB_STOP_ROOT], 1u);
}

// After dropg the slot names it for certain: a sched.sp outside its stack means it has left.
TEST_F(GHeaderTest, McallSlotGoroutineOutsideItsStackHasLeft) {
  SetCurrentG(kG0);
  mem_.Put64(kM + 192, 0);
  mem_.Put64(kG + 48, 0);
  uint64_t g0_sched_sp = kG0StackHi - 0x40, g0_fp = kG0StackHi - 0x100;
  mem_.Put64(kG0 + 56, g0_sched_sp);
  mem_.Put64(g0_sched_sp - 8, kG);
  Frame(g0_fp, 0, kMcall + 0x20);
  SetSched(kG, kGStackHi + 0x300, kMcallRet, 0);  // sched.sp above g.stack.hi
  ExpectSameBothWays([&] { return Run(kAllocFn + 0x10, g0_fp - 0x38, g0_fp); });
  EXPECT_EQ(counters_.stop[SB_STOP_GOROUTINE_LEFT], 1u);
}

TEST_F(GHeaderTest, MorestackReadsStatusAndSchedFromTheHeader) {
  SetCurrentG(kG0);
  uint64_t g0_fp = kG0StackHi - 0x100, f_sp = kGStackHi - 0x300, caller_fp = kGStackHi - 0x200;
  Frame(g0_fp, 0, kMorestack + 0x20);
  SetSched(kG, f_sp, kMorestackRet, caller_fp);
  mem_.Put64(f_sp, kMainF + 0x60);  // f's return address, pushed by its caller's CALL
  Frame(caller_fp, 0, kGoexit + 1);
  mem_.Put32(kG + 144, 2);  // _Grunning
  ExpectSameBothWays([&] { return Run(kAllocFn + 0x10, g0_fp - 0x38, g0_fp); });
  EXPECT_EQ(counters_.crossing[SB_CROSS_MORESTACK][SB_CNT_CROSSED], 1u);
}

// After dropg (m.curg = 0): the g pushed by mcall at g0.sched.sp - 8, still parked.
TEST_F(UnwindCoreTest, McallAfterDropgUsesTheG0Slot) {
  SetCurrentG(kG0);
  mem_.Put64(kM + 192, 0);   // dropg
  mem_.Put64(kG + 48, 0);    // parked: g.m == 0
  uint64_t g0_sched_sp = kG0StackHi - 0x40;
  mem_.Put64(kG0 + 56, g0_sched_sp);
  mem_.Put64(g0_sched_sp - 8, kG);
  uint64_t g0_fp = kG0StackHi - 0x100;
  uint64_t f_fp = kGStackHi - 0x200;
  Frame(g0_fp, 0, kMcall + 0x20);
  SetSched(kG, kGStackHi - 0x300, kMcallRet, f_fp);
  Frame(f_fp, 0, kGoexit + 1);
  auto r = Run(kAllocFn + 0x10, g0_fp - 0x38, g0_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x10, kMcall + 0x20, kMcallRet, kGoexit + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
}

// Sampled in execute (under schedule, under park_m): m.curg is already the goroutine about to
// run, not the one that called mcall; the g0 slot names the caller, and so does the sample.
TEST_F(UnwindCoreTest, McallUnderScheduleIgnoresTheNextCurg) {
  constexpr uint64_t kNextG = 0xc000004000;
  SetCurrentG(kG0);
  mem_.Put64(kM + 192, kNextG);  // execute: m.curg = next, next.m = m
  mem_.Put64(kNextG + 0, kGStackLo);
  mem_.Put64(kNextG + 8, kGStackHi);
  mem_.Put64(kNextG + 48, kM);
  mem_.Put64(kNextG + 152, 77);
  mem_.Put64(kNextG + 56 + 0, kGStackHi - 0x700);  // its own park point: not this stack's
  mem_.Put64(kNextG + 56 + 8, kMainF + 0x44);
  mem_.Put64(kG + 48, 0);  // the caller: parked
  auto r = RunUnderScheduleWithSlotG();
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x10, kSchedule + 0x20, kMcall + 0x20, kMcallRet,
                                              kGoexit + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(r.sample.goid, 42u);  // the goroutine that parked, not the next one (77)
}

// Under schedule, execute on this M picked the same goroutine again (Gosched with nothing else
// to run): m.curg is the slot's g and g.m is this m, but gogo has not run, so its sched is
// still mcall's. Crossed, not stale.
TEST_F(UnwindCoreTest, McallUnderScheduleSameGoroutinePickedAgain) {
  SetCurrentG(kG0);  // m.curg = kG and kG.m = kM (the fixture's running state)
  auto r = RunUnderScheduleWithSlotG();
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x10, kSchedule + 0x20, kMcall + 0x20, kMcallRet,
                                              kGoexit + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(r.sample.goid, 42u);
}

// The slot's goroutine already runs on another M (this M dropped it: m.curg 0): its sched is
// not this stack's. The stack ends at mcall, whole: goroutine_left.
TEST_F(UnwindCoreTest, McallSlotGoroutineRunningElsewhereHasLeft) {
  SetCurrentG(kG0);
  mem_.Put64(kM + 192, 0);
  mem_.Put64(kG + 48, 0xc000009000);  // g.m != 0: running elsewhere
  uint64_t g0_sched_sp = kG0StackHi - 0x40;
  mem_.Put64(kG0 + 56, g0_sched_sp);
  mem_.Put64(g0_sched_sp - 8, kG);
  uint64_t g0_fp = kG0StackHi - 0x100;
  Frame(g0_fp, 0, kMcall + 0x20);
  auto r = Run(kAllocFn + 0x10, g0_fp - 0x38, g0_fp);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_GOROUTINE_LEFT);
  EXPECT_TRUE(StopIsWhole(r.sample.stop_reason));
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x10, kMcall + 0x20}));
  EXPECT_EQ(r.sample.goid, 0u);  // no goroutine is named
  EXPECT_EQ(counters_.crossing[SB_CROSS_MCALL][SB_CNT_STOPPED], 1u);
  // A slot that cannot be read names no goroutine: that is not known to have left.
  mem_.Put64(kG0 + 56, 0x10);
  EXPECT_EQ(Run(kAllocFn + 0x10, g0_fp - 0x38, g0_fp).sample.stop_reason, SB_STOP_STALE_GOROUTINE);
}

// mcall(goexit0) after its dropg: the g0 slot names the exited goroutine's g, which gfput has
// already handed to a new goroutine that passes every check (parked, sched.sp in its stack).
// Crossing would show the scheduler's work under the new goroutine: stop, the stack is whole.
TEST_F(UnwindCoreTest, McallFromGoexit0AfterDropgEndsTheStack) {
  SetCurrentG(kG0);
  mem_.Put64(kM + 192, 0);   // dropg
  mem_.Put64(kG + 48, 0);    // reused: a new goroutine, not yet running
  uint64_t g0_sched_sp = kG0StackHi - 0x40;
  mem_.Put64(kG0 + 56, g0_sched_sp);
  mem_.Put64(g0_sched_sp - 8, kG);
  mem_.Put64(kG + 56 + 0, kGStackHi - 0x300);
  mem_.Put64(kG + 56 + 8, kMcallRet);
  uint64_t g0_fp = kG0StackHi - 0x100, goexit0_fp = kG0StackHi - 0x80;
  Frame(g0_fp, goexit0_fp, kGoexit0 + 0x20);
  Frame(goexit0_fp, 0, kMcall + 0x20);
  auto r = Run(kAllocFn + 0x10, g0_fp - 0x38, g0_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x10, kGoexit0 + 0x20, kMcall + 0x20}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_GOROUTINE_EXITED);
  EXPECT_TRUE(StopIsWhole(r.sample.stop_reason));
  EXPECT_EQ(r.sample.goid, 0u);  // no goroutine is named
  // Nothing was attempted: the mcall counters stay clean for real failures.
  EXPECT_EQ(counters_.crossing[SB_CROSS_MCALL][SB_CNT_ATTEMPTS], 0u);
  EXPECT_EQ(counters_.crossing[SB_CROSS_MCALL][SB_CNT_STOPPED], 0u);
}

// Under goexit0's schedule, execute may have set m.curg to the next goroutine: still exited.
TEST_F(UnwindCoreTest, McallFromGoexit0UnderScheduleEndsTheStack) {
  constexpr uint64_t kNextG = 0xc000004000;
  SetCurrentG(kG0);
  mem_.Put64(kM + 192, kNextG);
  mem_.Put64(kNextG + 0, kGStackLo);
  mem_.Put64(kNextG + 8, kGStackHi);
  mem_.Put64(kNextG + 48, kM);
  mem_.Put64(kNextG + 56 + 0, kGStackHi - 0x700);
  mem_.Put64(kNextG + 56 + 8, kMainF + 0x44);
  uint64_t g0_fp = kG0StackHi - 0x100, sched_fp = kG0StackHi - 0xc0, goexit0_fp = kG0StackHi - 0x80;
  Frame(g0_fp, sched_fp, kSchedule + 0x20);
  Frame(sched_fp, goexit0_fp, kGoexit0 + 0x30);
  Frame(goexit0_fp, 0, kMcall + 0x20);
  auto r = Run(kAllocFn + 0x10, g0_fp - 0x38, g0_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x10, kSchedule + 0x20, kGoexit0 + 0x30, kMcall + 0x20}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_GOROUTINE_EXITED);
}

// goexit0 before its dropg: m.curg is still the exiting goroutine, whose stack is intact.
TEST_F(UnwindCoreTest, McallFromGoexit0BeforeDropgCrossesToTheExitingGoroutine) {
  SetCurrentG(kG0);
  uint64_t g0_fp = kG0StackHi - 0x100, goexit0_fp = kG0StackHi - 0x80;
  uint64_t f_fp = kGStackHi - 0x200;
  Frame(g0_fp, goexit0_fp, kGoexit0 + 0x20);
  Frame(goexit0_fp, 0, kMcall + 0x20);
  SetSched(kG, kGStackHi - 0x300, kMcallRet, f_fp);
  Frame(f_fp, 0, kGoexit + 1);
  auto r = Run(kAllocFn + 0x10, g0_fp - 0x38, g0_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x10, kGoexit0 + 0x20, kMcall + 0x20, kMcallRet,
                                              kGoexit + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(counters_.crossing[SB_CROSS_MCALL][SB_CNT_CROSSED], 1u);
}

// newstack called from morestack: f (in its prologue), f's caller, then on to goexit.
TEST_F(UnwindCoreTest, MorestackEmitsTheGrowingFunctionAndItsCaller) {
  SetCurrentG(kG0);
  uint64_t g0_fp = kG0StackHi - 0x100;
  Frame(g0_fp, 0, kMorestack + 0x30);
  uint64_t sched_sp = kGStackHi - 0x300;
  uint64_t caller_fp = kGStackHi - 0x200;
  SetSched(kG, sched_sp, kMorestackRet, caller_fp);  // pc: after CALL morestack in f's prologue
  mem_.Put64(sched_sp, kMainF + 0xb0);     // f's return address into its caller
  Frame(caller_fp, 0, kGoexit + 1);
  mem_.Put32(kG + 144, 2);  // _Grunning
  auto r = Run(kAllocFn + 0x10, g0_fp - 0x38, g0_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x10, kMorestack + 0x30, kMorestackRet,
                                              kMainF + 0xb0, kGoexit + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
}

// While newstack copies the stack (_Gcopystack) the saved frame pointers are half adjusted:
// here sched.bp and the caller's record point at garbage. The goroutine is walked by SP and
// pcsp instead (main.f's frame is 0x28 at +0xb0), up to goexit.
TEST_F(UnwindCoreTest, MorestackDuringCopystackWalksBySp) {
  SetCurrentG(kG0);
  uint64_t g0_fp = kG0StackHi - 0x100;
  Frame(g0_fp, 0, kMorestack + 0x30);
  uint64_t sched_sp = kGStackHi - 0x300;
  SetSched(kG, sched_sp, kMorestackRet, 0xdead0000);  // bp stale: points at a freed stack
  mem_.Put64(sched_sp, kMainF + 0xb0);     // f's return address into its caller, main.f
  mem_.Put64(sched_sp + 8 + 0x28, kGoexit + 1);  // main.f's return address at SP + 0x28
  mem_.Put64(sched_sp + 8 + 0x20, 0xdead0100);   // and its stale saved BP
  mem_.Put32(kG + 144, 8 /* _Gcopystack */);
  auto r = Run(kAllocFn + 0x10, g0_fp - 0x38, g0_fp);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x10, kMorestack + 0x30, kMorestackRet,
                                              kMainF + 0xb0, kGoexit + 1}));
  EXPECT_EQ(counters_.crossing[SB_CROSS_MORESTACK][SB_CNT_CROSSED], 1u);

  // The instant between the two stores of the stack swap: sched.sp is outside g.stack. Keep
  // the growing function and its caller, and say why the stack ends there.
  mem_.Put64(kG + 0, sched_sp + 0x10);
  auto r2 = Run(kAllocFn + 0x10, g0_fp - 0x38, g0_fp);
  EXPECT_EQ(r2.sample.stop_reason, SB_STOP_COPYSTACK);
  EXPECT_EQ(Frames(r2), (std::vector<uint64_t>{kAllocFn + 0x10, kMorestack + 0x30, kMorestackRet,
                                               kMainF + 0xb0}));
}

// The stale state of the saved-pc rule: exitsyscall -> mcall(exitsyscall0) put the goroutine
// on the run queue and this M parked in stopm (under schedule); another M ran it, it was
// preempted at a stack check (its gobuf is morestack's) and is runnable again: parked
// (g.m == 0), sched.sp in its stack. Every older check passes; the saved pc is no return site
// of a call to mcall, so it is not this stack's caller: it has left (this M dropped it, and
// the slot names it for certain), and the g0 stack is whole as it is.
TEST_F(UnwindCoreTest, McallSlotGoroutineWithMorestacksSaveHasLeft) {
  SetCurrentG(kG0);
  mem_.Put64(kM + 192, 0);  // dropg
  mem_.Put64(kG + 48, 0);   // parked
  uint64_t g0_sched_sp = kG0StackHi - 0x40;
  mem_.Put64(kG0 + 56, g0_sched_sp);
  mem_.Put64(g0_sched_sp - 8, kG);
  uint64_t g0_fp = kG0StackHi - 0x100, sched_fp = kG0StackHi - 0x80;
  Frame(g0_fp, sched_fp, kSchedule + 0x20);
  Frame(sched_fp, 0, kMcall + 0x20);
  uint64_t sched_sp = kGStackHi - 0x300, caller_fp = kGStackHi - 0x200;
  SetSched(kG, sched_sp, kMorestackRet, caller_fp);  // its current state: morestack's save
  mem_.Put64(sched_sp, kMainF + 0xb0);
  Frame(caller_fp, 0, kGoexit + 1);
  auto r = Run(kAllocFn + 0x10, g0_fp - 0x38, g0_fp);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_GOROUTINE_LEFT);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x10, kSchedule + 0x20, kMcall + 0x20}));
  EXPECT_EQ(r.sample.goid, 0u);  // not named after a goroutine that did not ask for the work
  EXPECT_EQ(counters_.crossing[SB_CROSS_MCALL][SB_CNT_STOPPED], 1u);
  // The same goroutine parked by mcall (gopark's return site) is crossed.
  SetSched(kG, sched_sp, kMcallRet, caller_fp);
  auto ok = Run(kAllocFn + 0x10, g0_fp - 0x38, g0_fp);
  EXPECT_EQ(ok.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(Frames(ok), (std::vector<uint64_t>{kAllocFn + 0x10, kSchedule + 0x20, kMcall + 0x20, kMcallRet,
                                               kGoexit + 1}));
  // A saved pc one byte off a return site is not one.
  SetSched(kG, sched_sp, kMcallRet + 1, caller_fp);
  EXPECT_EQ(Run(kAllocFn + 0x10, g0_fp - 0x38, g0_fp).sample.stop_reason, SB_STOP_GOROUTINE_LEFT);
}

// The mcall crossing through m.curg (before dropg) applies the rule too.
TEST_F(UnwindCoreTest, McallCurgWithoutMcallsSaveIsStale) {
  SetCurrentG(kG0);
  uint64_t g0_fp = kG0StackHi - 0x100;
  Frame(g0_fp, 0, kMcall + 0x20);
  SetSched(kG, kGStackHi - 0x300, kSystemstackSwitch, kGStackHi - 0x200);
  auto r = Run(kAllocFn + 0x10, g0_fp - 0x38, g0_fp);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_STALE_GOROUTINE);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x10, kMcall + 0x20}));
}

// The saved-pc rule's callee check: each mcall site passes one known function, and on g0 the
// frame just below mcall is that function. Two sites here: kMcallRet (gopark's, passes park_m)
// and kMcallRet2 (exitsyscall's, passes exitsyscall0).
constexpr uint64_t kParkMFn = 0x401500;         // [0x401500, 0x401600)
constexpr uint64_t kExitsyscall0Fn = 0x401600;  // [0x401600, 0x401700)
constexpr uint64_t kMcallRet2 = kMainF + 0xc0;

class McallCalleeTest : public UnwindCoreTest {
 protected:
  void SetUp() override {
    UnwindCoreTest::SetUp();
    info_.nmcall_sites = 0;
    info_.mcall_sites[info_.nmcall_sites] = static_cast<uint32_t>(kMcallRet - kText);
    info_.mcall_fns[info_.nmcall_sites++] = Fn(kParkMFn);
    info_.mcall_sites[info_.nmcall_sites] = static_cast<uint32_t>(kMcallRet2 - kText);
    info_.mcall_fns[info_.nmcall_sites++] = Fn(kExitsyscall0Fn);
  }
  static sb_mcall_fn Fn(uint64_t entry) {
    return sb_mcall_fn{static_cast<uint32_t>(entry - kText), static_cast<uint32_t>(entry + 0x100 - kText)};
  }
  // g0: alloc fn <- callee (park_m or exitsyscall0) <- mcall; the g0 slot names kG, parked in
  // main.f at `saved_pc` (one of the two sites) under goexit. from_slot: after dropg.
  HostUnwindResult RunUnder(uint64_t callee, uint64_t saved_pc, bool from_slot = true, uint64_t link = 0) {
    SetCurrentG(kG0);
    mem_.Put64(kM + 192, from_slot ? 0 : kG);  // dropg, or still m.curg
    mem_.Put64(kG + 48, from_slot ? 0 : kM);   // parked, or still this m's
    uint64_t g0_sched_sp = kG0StackHi - 0x40;
    mem_.Put64(kG0 + 56, g0_sched_sp);
    mem_.Put64(g0_sched_sp - 8, kG);
    uint64_t g0_fp = kG0StackHi - 0x100, callee_fp = kG0StackHi - 0x80;
    Frame(g0_fp, callee_fp, callee + 0x20);
    Frame(callee_fp, link, kMcall + 0x20);  // link: the BP the callee saved (mcall's link)
    uint64_t f_fp = kGStackHi - 0x200;
    SetSched(kG, kGStackHi - 0x300, saved_pc, f_fp);
    Frame(f_fp, 0, kGoexit + 1);
    return Run(kAllocFn + 0x10, g0_fp - 0x38, g0_fp);
  }
};

// The hole the saved-pc rule left: this M runs exitsyscall0 under exitsyscall's mcall, while
// the goroutine in its g0 slot has since run on another M and parked again through gopark's
// mcall(park_m). Its sched.pc is a genuine mcall return site, but not this mcall's: not
// crossed; named for certain by the slot after dropg, it has left (goroutine_left, whole).
TEST_F(McallCalleeTest, GoroutineParkedAgainThroughAnotherSiteHasLeft) {
  auto r = RunUnder(kExitsyscall0Fn, kMcallRet);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_GOROUTINE_LEFT);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x10, kExitsyscall0Fn + 0x20, kMcall + 0x20}));
  EXPECT_EQ(r.sample.goid, 0u);  // not named after a goroutine that did not ask for the work
  EXPECT_EQ(counters_.crossing[SB_CROSS_MCALL][SB_CNT_STOPPED], 1u);
  EXPECT_EQ(counters_.crossing[SB_CROSS_MCALL][SB_CNT_CROSSED], 0u);
  // And the other way round: park_m on this M, the goroutine parked since by exitsyscall.
  EXPECT_EQ(RunUnder(kParkMFn, kMcallRet2).sample.stop_reason, SB_STOP_GOROUTINE_LEFT);
}

// Each site with its own callee is crossed, through the slot or through m.curg.
TEST_F(McallCalleeTest, EachSiteWithItsOwnCalleeIsCrossed) {
  for (auto [callee, site] : {std::pair{kParkMFn, kMcallRet}, std::pair{kExitsyscall0Fn, kMcallRet2}}) {
    for (bool from_slot : {true, false}) {
      SCOPED_TRACE(from_slot ? "g0 slot" : "m.curg");
      auto r = RunUnder(callee, site, from_slot);
      EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
      EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x10, callee + 0x20, kMcall + 0x20, site, kGoexit + 1}));
      EXPECT_EQ(r.sample.goid, 42u);
    }
  }
}

// m.curg (before dropg) is checked the same way (stale there: nothing explains it); a site
// whose callee was not decoded is not checked.
TEST_F(McallCalleeTest, CurgIsCheckedAndUndecodedSitesAreNot) {
  EXPECT_EQ(RunUnder(kExitsyscall0Fn, kMcallRet, /*from_slot=*/false).sample.stop_reason, SB_STOP_STALE_GOROUTINE);
  info_.mcall_fns[0] = sb_mcall_fn{0, 0};  // park_m's site: not decoded
  EXPECT_EQ(RunUnder(kExitsyscall0Fn, kMcallRet).sample.stop_reason, SB_STOP_ROOT);
}

// The frame-pointer walk skips a callee that called a frameless function which calls on (Go
// 1.19 park_m -> gcWriteBarrierDX -> gcWriteBarrier): the frame below mcall is then no mcall
// callee at all, and says nothing. Not checked; another site's callee there is stale.
TEST_F(McallCalleeTest, CalleeFrameSkippedByTheFramePointerWalkIsNotChecked) {
  auto r = RunUnder(kMainF, kMcallRet);  // main.f stands for gcWriteBarrierDX
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x10, kMainF + 0x20, kMcall + 0x20, kMcallRet, kGoexit + 1}));
  EXPECT_EQ(RunUnder(kParkMFn, kMcallRet2).sample.stop_reason, SB_STOP_GOROUTINE_LEFT);
}

// Sampled in mcall itself (its pc exact): no callee frame was walked, nothing to compare.
TEST_F(McallCalleeTest, SampledInMcallItselfHasNoCallee) {
  SetCurrentG(kG0);
  uint64_t g0_sp = kG0StackHi - 0x48;  // after mcall's switch and PUSHQ
  uint64_t f_fp = kGStackHi - 0x200;
  SetSched(kG, kGStackHi - 0x300, kMcallRet2, f_fp);
  Frame(f_fp, 0, kGoexit + 1);
  auto r = Run(kMcall + 0x18, g0_sp, 0);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kMcall + 0x18, kMcallRet2, kGoexit + 1}));
}

// mcall's link (amd64 Go 1.19 and 1.21-1.24, sb_mcall_link_ok): the frame pointer mcall's callee saved on
// g0 names the gobuf that very mcall saved. RunUnder's goroutine has sched.sp kGStackHi - 0x300
// and sched.bp kGStackHi - 0x200 (main.f's frame).
constexpr uint64_t kSchedSp = kGStackHi - 0x300, kSchedBp = kGStackHi - 0x200;

// Go 1.21-1.24: mcall's own frame record, right below its caller's SP. Through the slot and
// m.curg the goroutine whose gobuf mcall saved is crossed; one that parked again since through
// the same site (gopark's: every channel, lock and sleep) at another stack depth is not: left
// (slot) or stale (m.curg), as for a goroutine parked again through another site.
TEST_F(McallCalleeTest, LinkFrameNamesTheGobufThisMcallSaved) {
  info_.flags |= SB_PI_MCALL_LINK_FRAME;
  for (bool from_slot : {true, false}) {
    SCOPED_TRACE(from_slot ? "g0 slot" : "m.curg");
    auto r = RunUnder(kParkMFn, kMcallRet, from_slot, kSchedSp - 16);
    EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
    EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x10, kParkMFn + 0x20, kMcall + 0x20, kMcallRet, kGoexit + 1}));
    EXPECT_EQ(r.sample.goid, 42u);
    // This mcall's frame was 0x80 deeper: the goroutine has parked again since, same site.
    r = RunUnder(kParkMFn, kMcallRet, from_slot, kSchedSp - 16 - 0x80);
    EXPECT_EQ(r.sample.stop_reason, from_slot ? SB_STOP_GOROUTINE_LEFT : SB_STOP_STALE_GOROUTINE);
    EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x10, kParkMFn + 0x20, kMcall + 0x20}));
    if (from_slot) {
      EXPECT_EQ(r.sample.goid, 0u);  // not named after it (m.curg names the sample anyway)
    }
  }
  // The other form's value does not pass.
  EXPECT_EQ(RunUnder(kParkMFn, kMcallRet, true, kSchedBp).sample.stop_reason, SB_STOP_GOROUTINE_LEFT);
}

// Go 1.19: mcall has no frame; the callee saved mcall's caller's frame pointer, which mcall
// stored as gobuf.bp.
TEST_F(McallCalleeTest, LinkBpNamesTheGobufThisMcallSaved) {
  info_.flags |= SB_PI_MCALL_LINK_BP;
  EXPECT_EQ(RunUnder(kParkMFn, kMcallRet, true, kSchedBp).sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(RunUnder(kParkMFn, kMcallRet, false, kSchedBp).sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(RunUnder(kParkMFn, kMcallRet, true, kSchedBp + 0x40).sample.stop_reason, SB_STOP_GOROUTINE_LEFT);
  EXPECT_EQ(RunUnder(kParkMFn, kMcallRet, false, kSchedBp + 0x40).sample.stop_reason, SB_STOP_STALE_GOROUTINE);
  EXPECT_EQ(RunUnder(kParkMFn, kMcallRet, true, kSchedSp - 16).sample.stop_reason, SB_STOP_GOROUTINE_LEFT);
}

// Sampled in mcall itself on g0, BP is the link (the callee has not saved it yet); Go 1.25+
// clears BP there (no flag): nothing is compared, as for every test above without a flag.
TEST_F(McallCalleeTest, LinkSampledInMcallIsBp) {
  info_.flags |= SB_PI_MCALL_LINK_FRAME;
  SetCurrentG(kG0);
  uint64_t g0_sp = kG0StackHi - 0x48;
  SetSched(kG, kSchedSp, kMcallRet2, kSchedBp);
  Frame(kSchedBp, 0, kGoexit + 1);
  EXPECT_EQ(Run(kMcall + 0x18, g0_sp, kSchedSp - 16).sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(Run(kMcall + 0x18, g0_sp, kSchedSp - 16 - 0x40).sample.stop_reason, SB_STOP_STALE_GOROUTINE);
  info_.flags &= ~SB_PI_MCALL_LINK_FRAME;
  EXPECT_EQ(Run(kMcall + 0x18, g0_sp, 0).sample.stop_reason, SB_STOP_ROOT);
}

// morestack's crossing accepts only morestack's save: m.curg parked by mcall is not it.
TEST_F(UnwindCoreTest, MorestackWithMcallsSaveIsStale) {
  SetCurrentG(kG0);
  uint64_t g0_fp = kG0StackHi - 0x100;
  Frame(g0_fp, 0, kMorestack + 0x30);
  uint64_t sched_sp = kGStackHi - 0x300;
  SetSched(kG, sched_sp, kMcallRet, kGStackHi - 0x200);
  mem_.Put32(kG + 144, 2);
  auto r = Run(kAllocFn + 0x10, g0_fp - 0x38, g0_fp);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_STALE_GOROUTINE);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x10, kMorestack + 0x30}));
  EXPECT_EQ(counters_.crossing[SB_CROSS_MORESTACK][SB_CNT_STOPPED], 1u);
  // The CALL before the saved pc must go to morestack or morestack_noctxt.
  mem_.Put32(kMorestackRet - 4, static_cast<uint32_t>(kMainF + 0x40 - kMorestackRet));
  SetSched(kG, sched_sp, kMorestackRet, kGStackHi - 0x200);
  EXPECT_EQ(Run(kAllocFn + 0x10, g0_fp - 0x38, g0_fp).sample.stop_reason, SB_STOP_STALE_GOROUTINE);
}

// newstack preempted the goroutine (gopreempt_m -> dropg -> schedule) and execute set m.curg to
// the next goroutine, whose gobuf is morestack's too: it is not the goroutine that grew its
// stack under this morestack. Under schedule, morestack crosses nothing.
TEST_F(UnwindCoreTest, MorestackUnderScheduleIsStale) {
  SetCurrentG(kG0);
  uint64_t g0_fp = kG0StackHi - 0x100, sched_fp = kG0StackHi - 0x80;
  Frame(g0_fp, sched_fp, kSchedule + 0x20);
  Frame(sched_fp, 0, kMorestack + 0x30);
  uint64_t sched_sp = kGStackHi - 0x300, caller_fp = kGStackHi - 0x200;
  SetSched(kG, sched_sp, kMorestackRet, caller_fp);
  mem_.Put64(sched_sp, kMainF + 0xb0);
  Frame(caller_fp, 0, kGoexit + 1);
  mem_.Put32(kG + 144, 1);  // _Grunnable, m.curg = kG, kG.m = kM: what execute leaves
  auto r = Run(kAllocFn + 0x10, g0_fp - 0x38, g0_fp);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_STALE_GOROUTINE);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x10, kSchedule + 0x20, kMorestack + 0x30}));
}

// newstack preempted the goroutine (gopreempt_m -> goschedImpl -> dropg -> schedule): m.curg
// is not it any more (here: execute already set it to the next goroutine, kG2). newstack's
// local morebuf, where DWARF puts it (CFA - 0x60 in the return-address range of newstack),
// still names it with f's caller's pc and sp; the goroutine is parked with morestack's save and
// that caller frame: crossed, and the sample is named after it.
constexpr uint64_t kNewstack = 0x401900;  // [0x401900, 0x401a00)
constexpr uint64_t kG2 = 0xc000004000;    // the next goroutine execute picked

class NewstackMorebufTest : public UnwindCoreTest {
 protected:
  void SetUp() override {
    UnwindCoreTest::SetUp();
    info_.newstack_lo = static_cast<uint32_t>(kNewstack + 0x10 - kText);
    info_.newstack_hi = static_cast<uint32_t>(kNewstack + 0xc0 - kText);
    info_.morebuf_cfa_off = -0x60;
    info_.gobuf_g = 16;
    mem_.Put64(kM + 192, kG2);  // m.curg: the next goroutine
    mem_.Put64(kG2 + 48, kM);
    mem_.Put64(kG2 + 152, 43);
    mem_.Put64(kG + 48, 0);     // kG parked (runnable, on the global run queue)
    mem_.Put32(kG + 144, 1);
    SetSched(kG, sched_sp_, kMorestackRet, caller_fp_);
    mem_.Put64(sched_sp_, kMainF + 0xb0);  // f's return address into its caller
    Frame(caller_fp_, 0, kGoexit + 1);
    // g0: alloc fn -> schedule -> newstack -> morestack; morestack called newstack with SP at
    // g0.sched.sp, so newstack's CFA is g0.sched.sp = ns_fp + 16.
    Frame(g0_fp_, sched_fp_, kSchedule + 0x20);
    Frame(sched_fp_, ns_fp_, kNewstack + 0x80);
    Frame(ns_fp_, 0, kMorestack + 0x30);
    mem_.Put64(kG0 + 56, ns_fp_ + 16);
    SetMorebuf(kG, sched_sp_ + 8, kMainF + 0xb0);
  }
  void SetMorebuf(uint64_t g, uint64_t sp, uint64_t pc) {
    uint64_t mb = ns_fp_ + 16 - 0x60;
    mem_.Put64(mb + 0, sp);
    mem_.Put64(mb + 8, pc);
    mem_.Put64(mb + 16, g);
  }
  HostUnwindResult RunOnG0() {
    SetCurrentG(kG0);
    return Run(kAllocFn + 0x10, g0_fp_ - 0x38, g0_fp_);
  }
  const std::vector<uint64_t> g0_side_ = {kAllocFn + 0x10, kSchedule + 0x20, kNewstack + 0x80, kMorestack + 0x30};
  uint64_t g0_fp_ = kG0StackHi - 0x200, sched_fp_ = kG0StackHi - 0x180, ns_fp_ = kG0StackHi - 0x100;
  uint64_t sched_sp_ = kGStackHi - 0x300, caller_fp_ = kGStackHi - 0x200;
};

TEST_F(NewstackMorebufTest, PreemptedGoroutineFoundThroughMorebuf) {
  auto r = RunOnG0();
  std::vector<uint64_t> want = g0_side_;
  for (uint64_t pc : {kMorestackRet, kMainF + 0xb0, kGoexit + 1}) want.push_back(pc);
  EXPECT_EQ(Frames(r), want);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(r.sample.goid, 42u);  // the preempted goroutine, not m.curg (43)
  EXPECT_EQ(counters_.crossing[SB_CROSS_MORESTACK][SB_CNT_CROSSED], 1u);

  // Before execute ran: m.curg 0 (dropg). Same goroutine.
  mem_.Put64(kM + 192, 0);
  auto dropped = RunOnG0();
  EXPECT_EQ(Frames(dropped), want);
  EXPECT_EQ(dropped.sample.goid, 42u);

  // execute on this M picked the same goroutine again (m.curg = g, g.m = m): gogo has not run,
  // its sched is still morestack's. Crossed.
  mem_.Put64(kM + 192, kG);
  mem_.Put64(kG + 48, kM);
  EXPECT_EQ(Frames(RunOnG0()), want);
}

// The goroutine ran since (on another M) and stopped again with morestack's save, elsewhere:
// its caller frame is not the one morestack recorded in morebuf for this call. morebuf names it
// for certain and this M dropped it: it has left, the g0 stack is whole.
TEST_F(NewstackMorebufTest, GoroutinePreemptedAgainElsewhereHasLeft) {
  SetSched(kG, sched_sp_ + 0x40, kMorestackRet, caller_fp_);  // another depth
  mem_.Put64(sched_sp_ + 0x40, kMainF + 0xb0);
  auto r = RunOnG0();
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_GOROUTINE_LEFT);
  EXPECT_EQ(Frames(r), g0_side_);
  EXPECT_EQ(counters_.crossing[SB_CROSS_MORESTACK][SB_CNT_STOPPED], 1u);
  // Same depth, another caller.
  SetSched(kG, sched_sp_, kMorestackRet, caller_fp_);
  mem_.Put64(sched_sp_, kMainF + 0xc0);
  EXPECT_EQ(RunOnG0().sample.stop_reason, SB_STOP_GOROUTINE_LEFT);
  // Parked by mcall since (its save is no morestack save).
  mem_.Put64(sched_sp_, kMainF + 0xb0);
  SetSched(kG, sched_sp_, kMcallRet, caller_fp_);
  EXPECT_EQ(RunOnG0().sample.stop_reason, SB_STOP_GOROUTINE_LEFT);
}

TEST_F(NewstackMorebufTest, RunningGoroutineHasLeft) {
  mem_.Put64(kG + 48, 0xc000009000);  // running on another M
  auto r = RunOnG0();
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_GOROUTINE_LEFT);
  EXPECT_EQ(Frames(r), g0_side_);
  EXPECT_EQ(r.sample.goid, 43u);  // labelled as before: m.curg, not the goroutine it could not prove
}

// The code proof's range ends at the last preempting call's return site (newstack_morebuf.h: a
// return address r with r - 1 in [lo, hi)): a goroutine preempted through that call is found.
TEST_F(NewstackMorebufTest, RangeEndingAtTheReturnSiteCoversTheCall) {
  info_.newstack_hi = static_cast<uint32_t>(kNewstack + 0x80 - kText);  // the return address itself
  auto r = RunOnG0();
  EXPECT_NE(r.sample.stop_reason, SB_STOP_STALE_GOROUTINE);
  EXPECT_TRUE(r.sample.crossed & (1u << SB_CROSS_MORESTACK));
}

// Without the DWARF proof, or at a return address outside its range, or when the walk is not
// at newstack's CFA (g0.sched.sp), nothing is read from newstack's frame.
TEST_F(NewstackMorebufTest, NoProofNoGoroutine) {
  info_.newstack_hi = 0;
  EXPECT_EQ(RunOnG0().sample.stop_reason, SB_STOP_STALE_GOROUTINE);
  info_.newstack_hi = static_cast<uint32_t>(kNewstack + 0x7f - kText);  // ends before the call's last byte
  EXPECT_EQ(RunOnG0().sample.stop_reason, SB_STOP_STALE_GOROUTINE);
  info_.newstack_hi = static_cast<uint32_t>(kNewstack + 0xc0 - kText);
  info_.newstack_lo = static_cast<uint32_t>(kNewstack + 0x80 - kText);  // starts at the return address
  EXPECT_EQ(RunOnG0().sample.stop_reason, SB_STOP_STALE_GOROUTINE);
  info_.newstack_lo = static_cast<uint32_t>(kNewstack + 0x10 - kText);
  // g0.sched.sp off the walk, with a morebuf-like record where it would put morebuf.
  mem_.Put64(kG0 + 56, ns_fp_ + 16 - 0x100);
  uint64_t off_mb = ns_fp_ + 16 - 0x100 - 0x60;
  mem_.Put64(off_mb + 0, sched_sp_ + 8);
  mem_.Put64(off_mb + 8, kMainF + 0xb0);
  mem_.Put64(off_mb + 16, kG);
  EXPECT_EQ(RunOnG0().sample.stop_reason, SB_STOP_STALE_GOROUTINE);
  mem_.Put64(kG0 + 56, ns_fp_ + 16);
  EXPECT_EQ(RunOnG0().sample.stop_reason, SB_STOP_ROOT);
}

// amd64 gogo (unwinder/gogo_window.h): MOVQ DX, FS:g (9 bytes) | MOVQ DX, R14 | MOVQ (BX), SP |
// ... MOVQ 0x30(BX), BP ... | JMP BX. Decoded windows at kGogo.
constexpr uint64_t kGogo = 0x401a00;  // [0x401a00, 0x401a40), no frame (pcsp 0)

class GogoWindowTest : public UnwindCoreTest {
 protected:
  void SetUp() override {
    UnwindCoreTest::SetUp();
    info_.gogo_g0_lo = kGogo + 0x9;
    info_.gogo_g0_hi = kGogo + 0xf;
    info_.gogo_gp_lo = kGogo + 0xf;
    info_.gogo_gp_hi = kGogo + 0x40;
    info_.gogo_bp_loaded = kGogo + 0x17;
    SetCurrentG(kG);  // gogo's first instruction stored gp in TLS; execute set m.curg, gp.m
  }
};

// SP still on g0: execute -> gogo on g0 under schedule, mcall below with the goroutine that
// called it (kG2, parked by mcall) in the g0 slot. The thread is on g0: crossed at mcall.
TEST_F(GogoWindowTest, SpStillOnG0WalksG0) {
  uint64_t g0_sched_sp = kG0StackHi - 0x40;
  mem_.Put64(kG0 + 56, g0_sched_sp);
  mem_.Put64(g0_sched_sp - 8, kG2);
  mem_.Put64(kG2 + 0, kGStackLo + 0x10000);
  mem_.Put64(kG2 + 8, kGStackHi + 0x10000);
  mem_.Put64(kG2 + 152, 43);
  mem_.Put64(kG2 + 48, 0);  // parked
  uint64_t g2_sp = kGStackHi + 0x10000 - 0x300, g2_fp = g2_sp + 0x20;
  SetSched(kG2, g2_sp, kMcallRet, g2_fp);
  Frame(g2_fp, 0, kGoexit + 1);
  uint64_t g0_sp = kG0StackHi - 0x200, exec_fp = kG0StackHi - 0x180, sched_fp = kG0StackHi - 0x100;
  mem_.Put64(g0_sp, kAllocFn + 0x30);  // gogo's return address into execute
  Frame(exec_fp, sched_fp, kSchedule + 0x20);
  Frame(sched_fp, 0, kMcall + 0x20);
  auto r = Run(kGogo + 0xc, g0_sp, exec_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kGogo + 0xc, kAllocFn + 0x30, kSchedule + 0x20, kMcall + 0x20,
                                              kMcallRet, kGoexit + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_TRUE(r.sample.flags & SB_SAMPLE_ON_G0);
  // Without the decoded window the thread looks like it runs kG on g0's stack: no crossing.
  info_.gogo_gp_hi = 0;
  EXPECT_NE(Run(kGogo + 0xc, g0_sp, exec_fp).sample.stop_reason, SB_STOP_ROOT);
  // The first instruction (the TLS store itself) has not run at its own pc: g is still g0.
  info_.gogo_gp_hi = kGogo + 0x40;
  SetCurrentG(kG0);
  EXPECT_EQ(Run(kGogo + 0x0, g0_sp, exec_fp).sample.stop_reason, SB_STOP_ROOT);
}

// SP already gp's: gp resumes at sched.pc (mcall's save: gopark's return site) with that SP,
// BP from gobuf.bp until gogo loads it, from the register after (gogo cleared gobuf.bp).
TEST_F(GogoWindowTest, SpOnTheGoroutineResumesAtSchedPc) {
  uint64_t sp = kGStackHi - 0x300, f_fp = sp + 0x20;  // main.f at kMcallRet: frame 0x28
  SetSched(kG, 0 /* cleared */, kMcallRet, f_fp);
  Frame(f_fp, 0, kGoexit + 1);
  uint64_t g0_fp = kG0StackHi - 0x100;
  auto before_bp = Run(kGogo + 0x13, sp, g0_fp);
  EXPECT_EQ(Frames(before_bp), (std::vector<uint64_t>{kGogo + 0x13, kMcallRet, kGoexit + 1}));
  EXPECT_EQ(before_bp.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(before_bp.sample.goid, 42u);
  SetSched(kG, 0, kMcallRet, 0);
  auto after_bp = Run(kGogo + 0x20, sp, f_fp);
  EXPECT_EQ(Frames(after_bp), (std::vector<uint64_t>{kGogo + 0x20, kMcallRet, kGoexit + 1}));
  EXPECT_EQ(after_bp.sample.stop_reason, SB_STOP_ROOT);
  // A gobuf that is no save of mcall or morestack (here main.f's entry): gogo only, stale.
  SetSched(kG, 0, kMainF, f_fp);
  auto other = Run(kGogo + 0x13, sp, g0_fp);
  EXPECT_EQ(Frames(other), (std::vector<uint64_t>{kGogo + 0x13}));
  EXPECT_EQ(other.sample.stop_reason, SB_STOP_STALE_GOROUTINE);
  // SP outside gp's stack: not gp's.
  SetSched(kG, 0, kMcallRet, f_fp);
  EXPECT_EQ(Run(kGogo + 0x13, kG0StackHi - 0x300, g0_fp).sample.stop_reason, SB_STOP_STALE_GOROUTINE);
}

// amd64 runtime.systemstack's windows: `MOVQ DX, FS:g` (g0) ... `MOVQ ..., SP` and, after fn
// returned, `MOVQ AX, FS:g` (curg) | `MOVQ gobuf_sp(AX), SP`. Decoded at kSystemstack.
class SystemstackWindowTest : public UnwindCoreTest {
 protected:
  void SetUp() override {
    UnwindCoreTest::SetUp();
    info_.sstack_g0_lo = kSystemstack + 0x18;
    info_.sstack_g0_hi = kSystemstack + 0x1e;
    info_.sstack_gp_lo = kSystemstack + 0x30;
    info_.sstack_gp_hi = kSystemstack + 0x34;
  }
  // Go 1.21+: systemstack pushes BP first (pcsp 8 from +1), no sched recipe.
  void NewerGo() {
    info_.flags &= ~SB_PI_SYSTEMSTACK_SCHED;
    deltas_.insert(deltas_.begin() + 1, {{0x041, 8}, {0x080, 0}});
    info_.delta_count = static_cast<uint32_t>(deltas_.size());
  }
};

// Switch in: TLS says g0, but SP and BP are still the goroutine's (F called systemstack there).
// Walked as on the goroutine: systemstack by its pcsp, then F; named after the goroutine.
TEST_F(SystemstackWindowTest, SwitchInWalksTheGoroutine) {
  SetCurrentG(kG0);
  uint64_t sp = kGStackHi - 0x300, f_fp = kGStackHi - 0x200;
  mem_.Put64(sp, kMainF + 0x90);  // Go 1.19: no frame, F's return address at SP
  Frame(f_fp, 0, kGoexit + 1);
  auto r = Run(kSystemstack + 0x1a, sp, f_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kSystemstack + 0x1a, kMainF + 0x90, kGoexit + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(r.sample.goid, 42u);
  EXPECT_FALSE(r.sample.flags & SB_SAMPLE_ON_G0);
  EXPECT_EQ(counters_.crossing[SB_CROSS_SYSTEMSTACK][SB_CNT_ATTEMPTS], 0u);  // nothing to cross
  // Go 1.21+: systemstack's own frame record (PUSHQ BP; MOVQ SP, BP) leads to F.
  NewerGo();
  uint64_t ss_fp = sp - 8;
  Frame(ss_fp, f_fp, kMainF + 0x90);
  auto newer = Run(kSystemstack + 0x1a, ss_fp, ss_fp);
  EXPECT_EQ(Frames(newer), (std::vector<uint64_t>{kSystemstack + 0x1a, kMainF + 0x90, kGoexit + 1}));
  EXPECT_EQ(newer.sample.stop_reason, SB_STOP_ROOT);
  // SP on no stack of curg's: not that window's state, the thread is on g0 as TLS says.
  auto off_stack = Run(kSystemstack + 0x1a, kG0StackHi - 0x300, ss_fp);
  EXPECT_TRUE(off_stack.sample.flags & SB_SAMPLE_ON_G0);
}

// Switch back (Go 1.21+): TLS is curg again, SP still on g0 where fn returned (there: a zero
// word, the live end_of_chain), BP systemstack's record on the goroutine. Walked as on g0: the
// systemstack crossing follows the record to F.
TEST_F(SystemstackWindowTest, SwitchBackWalksG0AndCrosses) {
  NewerGo();
  SetCurrentG(kG);
  uint64_t g0_sp = kG0StackHi - 0x40, ss_fp = kGStackHi - 0x308, f_fp = kGStackHi - 0x200;
  mem_.Put64(g0_sp, 0);
  mem_.Put64(g0_sp + 8, 0);
  Frame(ss_fp, f_fp, kMainF + 0x90);
  Frame(f_fp, 0, kGoexit + 1);
  auto r = Run(kSystemstack + 0x30, g0_sp, ss_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kSystemstack + 0x30, kMainF + 0x90, kGoexit + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(r.sample.goid, 42u);
  EXPECT_EQ(counters_.crossing[SB_CROSS_SYSTEMSTACK][SB_CNT_CROSSED], 1u);
  // Without the decoded window: walked as on the goroutine from g0's SP, end_of_chain.
  info_.sstack_gp_hi = 0;
  info_.sstack_g0_hi = 0;
  auto before = Run(kSystemstack + 0x30, g0_sp, ss_fp);
  EXPECT_EQ(before.sample.stop_reason, SB_STOP_END_OF_CHAIN);
  EXPECT_EQ(Frames(before), (std::vector<uint64_t>{kSystemstack + 0x30}));
}

// Switch back before Go 1.21 (the sched recipe): F's return address at curg.sched.sp, which
// systemstack clears only after its SP load.
TEST_F(SystemstackWindowTest, SwitchBackUsesSchedOnOlderGo) {
  SetCurrentG(kG);
  uint64_t g0_sp = kG0StackHi - 0x40, sched_sp = kGStackHi - 0x300, f_fp = kGStackHi - 0x200;
  mem_.Put64(sched_sp, kMainF + 0x90);
  Frame(f_fp, 0, kGoexit + 1);
  SetSched(kG, sched_sp, kSystemstackSwitch + 4, f_fp);
  auto r = Run(kSystemstack + 0x31, g0_sp, f_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kSystemstack + 0x31, kMainF + 0x90, kGoexit + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_TRUE(r.sample.flags & SB_SAMPLE_ON_G0);
  // The window's pcs only: one past it, SP is already the goroutine's.
  EXPECT_NE(Run(kSystemstack + 0x34, g0_sp, f_fp).sample.stop_reason, SB_STOP_ROOT);
}

// amd64 runtime.asmcgocall's windows (FindAsmcgocallWindow): `MOVQ SI, FS:g` (g0) |
// `MOVQ gobuf_sp(SI), SP` before the C call and, after it, `MOVQ DI, FS:g` (the goroutine) |
// `MOVQ SI, SP`. Switch back: TLS is the goroutine again while SP is still on g0, at the aligned
// frame where asmcgocall saved the stack depth ([SP]) and g ([SP+8]). Walked as on g0, the
// asmcgocall crossing leads to cgocall's caller (here the sched recipe, Go 1.19); walked as on
// the goroutine, the saved words would be read as return addresses: a stray frame between
// asmcgocall and its caller (tests/integration/cgo_windows_test.cc).
TEST_F(SystemstackWindowTest, AsmcgocallSwitchBackWalksG0AndCrosses) {
  info_.acgo_switched_lo = static_cast<uint32_t>(kAsmcgocall + 0x10 - kText);
  info_.acgo_direct_lo = static_cast<uint32_t>(kAsmcgocall + 0x34 - kText);
  info_.acgo_g0_lo = kAsmcgocall + 0x18;
  info_.acgo_g0_hi = kAsmcgocall + 0x1c;
  info_.acgo_gp_lo = kAsmcgocall + 0x2c;
  info_.acgo_gp_hi = kAsmcgocall + 0x2f;
  SetCurrentG(kG);
  uint64_t g0_sp = kG0StackHi - 0x40, sched_sp = kGStackHi - 0x300, f_fp = sched_sp + 0x28;
  mem_.Put64(g0_sp, kGStackHi - sched_sp);  // the depth in the goroutine's stack
  mem_.Put64(g0_sp + 8, kG);                // the goroutine
  mem_.Put64(sched_sp, kMainF + 0x90);      // asmcgocall's return address into its caller
  Frame(f_fp, 0, kGoexit + 1);
  SetSched(kG, sched_sp, kSystemstackSwitch, f_fp);
  auto r = Run(kAsmcgocall + 0x2c, g0_sp, f_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAsmcgocall + 0x2c, kMainF + 0x90, kGoexit + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(r.sample.goid, 42u);
  EXPECT_TRUE(r.sample.flags & SB_SAMPLE_ON_G0);
  EXPECT_EQ(counters_.crossing[SB_CROSS_ASMCGOCALL][SB_CNT_CROSSED], 1u);
  // One past the window SP is the goroutine's again: no longer walked as on g0.
  EXPECT_FALSE(Run(kAsmcgocall + 0x2f, sched_sp, f_fp).sample.flags & SB_SAMPLE_ON_G0);
  // Switch in (TLS g0, SP still the goroutine's at asmcgocall's entry): as on the goroutine.
  SetCurrentG(kG0);
  auto in = Run(kAsmcgocall + 0x18, sched_sp, f_fp);
  EXPECT_EQ(Frames(in), (std::vector<uint64_t>{kAsmcgocall + 0x18, kMainF + 0x90, kGoexit + 1}));
  EXPECT_FALSE(in.sample.flags & SB_SAMPLE_ON_G0);
  EXPECT_EQ(in.sample.goid, 42u);
  // Without the decoded windows, switch back reads g0's words as the goroutine's frames.
  SetCurrentG(kG);
  info_.acgo_g0_hi = 0;
  info_.acgo_gp_hi = 0;
  auto before = Run(kAsmcgocall + 0x2c, g0_sp, f_fp);
  EXPECT_NE(Frames(before), Frames(r));
  EXPECT_FALSE(before.sample.flags & SB_SAMPLE_ON_G0);
}

// systemstack's sched recipe (amd64 < 1.21) accepts only gosave_systemstack_switch's save.
TEST_F(UnwindCoreTest, SystemstackWithAnotherSaveIsStale) {
  SetCurrentG(kG0);
  uint64_t g0_fp = kG0StackHi - 0x100;
  uint64_t sched_sp = kGStackHi - 0x300, f_fp = kGStackHi - 0x200;
  Frame(g0_fp, f_fp, kSystemstack + 0x30);
  mem_.Put64(sched_sp, kMainF + 0x90);
  Frame(f_fp, 0, kGoexit + 1);
  SetSched(kG, sched_sp, kMcallRet, f_fp);
  auto r = Run(kAllocFn + 0x50, g0_fp - 0x38, g0_fp);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_STALE_GOROUTINE);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x50, kSystemstack + 0x30}));
  EXPECT_EQ(counters_.crossing[SB_CROSS_SYSTEMSTACK][SB_CNT_STOPPED], 1u);
}

// Idle M: g0 stack down to mstart.
TEST_F(UnwindCoreTest, G0StackEndsAtMstart) {
  SetCurrentG(kG0);
  mem_.Put64(kM + 192, 0);
  uint64_t fp0 = kG0StackHi - 0x100, fp1 = kG0StackHi - 0x80;
  Frame(fp0, fp1, kAllocFn + 0x80);
  Frame(fp1, 0xdead, kMstart + 5);  // garbage below the root must never be followed
  auto r = Run(kAllocFn + 0x20, fp0 - 0x38, fp0);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x20, kAllocFn + 0x80, kMstart + 5}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(r.sample.goid, 0u);
}

// vDSO code on the g0 stack, called by time.now on behalf of a goroutine: continue from
// m.vdsoPC / m.vdsoSP, with time.now's saved frame pointer at vdsoSP - 16.
TEST_F(UnwindCoreTest, VdsoContinuesFromVdsoPcAndSp) {
  info_.off.m_vdsosp = 800;
  info_.off.m_vdsopc = 808;
  info_.vdso_start = 0x7fff00000000;
  info_.vdso_end = 0x7fff00002000;
  SetCurrentG(kG0);
  uint64_t vdso_fp = kG0StackHi - 0x100;            // the vDSO function's own frame on g0
  Frame(vdso_fp, kG0StackHi - 0x80, 0x7fff00000500);
  uint64_t vsp = kGStackHi - 0x300, caller_fp = kGStackHi - 0x200;
  mem_.Put64(kM + 800, vsp);
  mem_.Put64(kM + 808, kMainF + 0xc0);               // return address into time.now's caller
  mem_.Put64(vsp - 16, caller_fp);                   // time.now's saved BP
  Frame(caller_fp, 0, kGoexit + 1);
  auto r = Run(0x7fff00000400, vdso_fp - 0x10, vdso_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{0x7fff00000400, kMainF + 0xc0, kGoexit + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(counters_.crossing[SB_CROSS_VDSO][SB_CNT_CROSSED], 1u);
}

TEST_F(UnwindCoreTest, FramePointerGoingDownIsBadFp) {
  SetCurrentG(kG);
  uint64_t fp0 = kGStackHi - 0x100;
  Frame(fp0, fp0 - 0x40, kMainF + 0x50);  // saved fp below the current one
  Frame(fp0 - 0x40, 0, kGoexit + 1);
  auto r = Run(kMainF + 0x30, fp0 - 0x20, fp0);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_BAD_FP);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kMainF + 0x30, kMainF + 0x50}));
}

TEST_F(UnwindCoreTest, InjectedFaultStopsWithReadFault) {
  SetCurrentG(kG);
  uint64_t fp0 = kGStackHi - 0x100, fp1 = kGStackHi - 0x80;
  Frame(fp0, fp1, kMainF + 0x50);
  Frame(fp1, 0, kGoexit + 1);
  faults_.insert(fp1 + 8);
  auto r = Run(kMainF + 0x30, fp0 - 0x20, fp0);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_READ_FAULT);
  EXPECT_EQ(r.faults_hit, std::set<uint64_t>{fp1 + 8});
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kMainF + 0x30, kMainF + 0x50}));
}

TEST_F(UnwindCoreTest, LongChainStopsAtMaxFrames) {
  SetCurrentG(kG);
  uint64_t fp = kGStackLo + 0x100;
  for (int i = 0; i < 200; i++) Frame(fp + 0x20 * i, fp + 0x20 * (i + 1), kMainF + 0x50);
  auto r = Run(kMainF + 0x30, fp - 0x20, fp);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_MAX_FRAMES);
  EXPECT_EQ(r.sample.nframes, static_cast<uint32_t>(SB_DEFAULT_MAX_FRAMES));  // max_frames 0: 128
}

// --max-frames (sb_proc_info.max_frames): the leaf side is kept up to the limit, up to 1024; a
// stack shorter than the limit is whole; the exact bit of a frame past 128 lands in its word.
TEST_F(UnwindCoreTest, MaxFramesIsTheProcessLimit) {
  SetCurrentG(kG);
  uint64_t fp = kGStackLo + 0x100;
  constexpr int kDepth = 1500;
  for (int i = 0; i < kDepth; i++) Frame(fp + 0x20 * i, fp + 0x20 * (i + 1), kMainF + 0x50);
  for (uint32_t limit : {1u, 5u, 300u, 1024u}) {
    info_.max_frames = limit;
    auto r = Run(kMainF + 0x30, fp - 0x20, fp);
    EXPECT_EQ(r.sample.stop_reason, SB_STOP_MAX_FRAMES) << limit;
    ASSERT_EQ(r.sample.nframes, limit);
    EXPECT_EQ(r.sample.frames[0], kMainF + 0x30);  // the leaf
    if (limit > 1) {
      EXPECT_EQ(r.sample.frames[limit - 1], kMainF + 0x50);
    }
  }
  info_.max_frames = 5000;  // beyond the room: clamped to SB_MAX_FRAMES
  EXPECT_EQ(Run(kMainF + 0x30, fp - 0x20, fp).sample.nframes, static_cast<uint32_t>(SB_MAX_FRAMES));
  // A 400-frame stack ending at goexit is whole under a 1024 limit.
  Frame(fp + 0x20 * 398, 0, kGoexit + 1);
  info_.max_frames = 1024;
  auto whole = Run(kMainF + 0x30, fp - 0x20, fp);
  EXPECT_EQ(whole.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(whole.sample.nframes, 400u);
  EXPECT_EQ(whole.sample.frames[399], kGoexit + 1);
}

// The frames after a frame-pointer step are taken several per loop iteration while they are
// plain (sb_plain_frames): every limit across those bursts keeps exactly `limit` frames, and a
// chain that reaches a root or a switch function inside a burst still ends or crosses there.
TEST_F(UnwindCoreTest, PlainFrameBurstsKeepTheLimitTheRootAndTheCrossings) {
  SetCurrentG(kG);
  uint64_t fp = kGStackLo + 0x100;
  for (int i = 0; i < 40; i++) Frame(fp + 0x20 * i, fp + 0x20 * (i + 1), kMainF + 0x50 + 4 * (i % 3));
  for (uint32_t limit = 1; limit <= 3 * SB_PLAIN_BURST + 3; limit++) {
    info_.max_frames = limit;
    faults_ = {fp + 0x20 * (limit - 1)};  // the record past the limit: never read
    stack_window_ = false;  // (the window reads ahead on the page: the limit is about records)
    auto r = Run(kMainF + 0x30, fp - 0x20, fp);
    EXPECT_EQ(r.sample.stop_reason, SB_STOP_MAX_FRAMES) << limit;
    EXPECT_TRUE(r.faults_hit.empty()) << limit;
    ASSERT_EQ(r.sample.nframes, limit);
    for (uint32_t i = 1; i < limit; i++) EXPECT_EQ(r.sample.frames[i], kMainF + 0x50 + 4 * ((i - 1) % 3)) << limit;
  }
  info_.max_frames = 0;
  faults_.clear();
  stack_window_ = true;
  for (int end = 1; end <= 2 * SB_PLAIN_BURST + 1; end++) {  // goexit as the end-th caller
    Frame(fp + 0x20 * (end - 1), fp + 0x20 * end, kGoexit + 1);
    auto r = Run(kMainF + 0x30, fp - 0x20, fp);
    EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT) << end;
    EXPECT_EQ(r.sample.nframes, static_cast<uint32_t>(end + 1)) << end;
    Frame(fp + 0x20 * (end - 1), fp + 0x20 * end, kMainF + 0x50 + 4 * ((end - 1) % 3));
  }
  // On g0: plain frames, then runtime.systemstack in the middle of a burst, then the goroutine.
  info_.flags &= ~SB_PI_SYSTEMSTACK_SCHED;
  SetCurrentG(kG0);
  uint64_t g0_fp = kG0StackHi - 0x400, f_fp = kGStackHi - 0x200;
  std::vector<uint64_t> want{kAllocFn + 0x50};
  for (int i = 0; i < 6; i++) {
    Frame(g0_fp + 0x20 * i, g0_fp + 0x20 * (i + 1), kAllocFn + 0x80);
    want.push_back(kAllocFn + 0x80);
  }
  Frame(g0_fp + 0x20 * 6, f_fp, kSystemstack + 0x30);
  Frame(f_fp, 0, kGoexit + 1);
  want.insert(want.end(), {kSystemstack + 0x30, kGoexit + 1});
  auto r = Run(kAllocFn + 0x50, g0_fp - 0x38, g0_fp);
  EXPECT_EQ(Frames(r), want);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(counters_.crossing[SB_CROSS_SYSTEMSTACK][SB_CNT_CROSSED], 1u);
}

// The stack window (sb_read_record with SB_HAS_STACK_WINDOW): the frame records of a page are
// served from one read of up to SB_STACK_WINDOW_BYTES, never past the page's end; a record that
// straddles two pages, or lies past the window, is read as before. Same frames either way, and
// the stack is read a few times instead of once per frame.
TEST_F(UnwindCoreTest, StackWindowReadsAheadOnOnePageAndFindsTheSameFrames) {
  SetCurrentG(kG);
  mem_.FillAbsent(kGStackLo, kGStackHi - kGStackLo);  // whole pages, as a core or a live stack has
  uint64_t fp = kGStackLo + 0xf18;  // the 8th record at 0xff8: it straddles the page boundary
  const int n = 130;                // 130 records of 32 bytes: four reads
  info_.max_frames = 256;
  for (int i = 0; i < n; i++) Frame(fp + 0x20 * i, fp + 0x20 * (i + 1), kMainF + 0x50 + 4 * (i % 3));
  Frame(fp + 0x20 * n, 0, kGoexit + 1);
  auto run = [&](bool window) {
    HostUnwindInput in = Prepare();
    in.memory = &mem_;
    in.record_reads = true;
    in.stack_window = window;
    Registers r;
    r.pc = kMainF + 0x30; r.sp = fp - 0x20; r.fp = fp; r.tls_base = kFsBase;
    sb_counters c{};
    return UnwindOnHost(in, r, &c);
  };
  auto with = run(true), without = run(false);
  ASSERT_EQ(with.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(with.sample.nframes, static_cast<uint32_t>(n + 2));
  EXPECT_EQ(Frames(with), Frames(without));
  auto stack_reads = [](const HostUnwindResult& r) {
    std::vector<uint64_t> out;
    for (uint64_t a : r.reads)
      if (a >= kGStackLo && a < kGStackHi) out.push_back(a);
    return out;
  };
  EXPECT_EQ(stack_reads(without).size(), static_cast<size_t>(n + 1));  // one per record
  info_.max_frames = 0;
  // With it (SB_STACK_WINDOW_BYTES 2048): a window at the first record, to its page's end
  // (0xf18: 232 bytes, records 0xf18-0xfd8); the straddling record at 0xff8 alone; a window of
  // 2048 bytes at 0x1018 (records up to 0x17f8); one at 0x1818 to the page's end (2024 bytes:
  // the rest, up to 0x1f58).
  static_assert(SB_STACK_WINDOW_BYTES == 2048, "the expected reads assume a 2 KiB window");
  ASSERT_EQ(fp + 0x20 * 7, kGStackLo + 0x1000 - 8);
  std::vector<uint64_t> expected = {kGStackLo + 0xf18, kGStackLo + 0xff8, kGStackLo + 0x1018, kGStackLo + 0x1818};
  EXPECT_EQ(stack_reads(with), expected);
}

// The special span's block bitmap (proc_info_spans.h): a block is free only when no range
// touches it, the blocks fit in SB_SPECIAL_BLOCKS, and a pc in a range's block but outside the
// range is still searched and found to be in none.
TEST(SpecialFreeBlocks, OnlyBlocksNoRangeTouchesAreFree) {
  sb_proc_info pi{};
  pi.ranges[pi.nranges++] = sb_range{0x500000, 0x500020, SB_FN_ROOT, 0};
  pi.ranges[pi.nranges++] = sb_range{0x5000f0, 0x500110, SB_FN_MCALL, 0};  // two 64-byte blocks
  pi.ranges[pi.nranges++] = sb_range{0x500400, 0x500440, SB_FN_SYSTEMSTACK, 0};
  SetProcInfoSpans(&pi);
  ASSERT_EQ(pi.special_shift, 6u);
  auto free_block = [&](uint64_t b) { return (pi.special_free[b >> 6] >> (b & 63)) & 1; };
  for (uint64_t b = 0; b < 0x440 / 64; b++)
    EXPECT_EQ(free_block(b), (b == 0 || b == 3 || b == 4 || b == 0x10) ? 0u : 1u) << b;
  EXPECT_EQ(free_block(0x440 / 64), 0u);  // past the span: never free (sb_outside_special answers)
  bool bitmap = false;
  EXPECT_EQ(ClassifyOnHost(pi, 0x500080, &bitmap), SB_FN_NONE);  // a free block
  EXPECT_TRUE(bitmap);
  EXPECT_EQ(ClassifyOnHost(pi, 0x500020, &bitmap), SB_FN_NONE);  // root's block, past root:
  EXPECT_FALSE(bitmap);                                           //   searched, in no range
  EXPECT_EQ(ClassifyOnHost(pi, 0x500100, &bitmap), SB_FN_MCALL);
  EXPECT_FALSE(bitmap);
  EXPECT_EQ(ClassifyOnHost(pi, 0x4fffff, &bitmap), SB_FN_NONE);  // outside the span
  EXPECT_TRUE(bitmap);
  // A span of 1 MiB: blocks of 1 KiB fit the 1024 bits, and the last range's block is not free.
  pi.ranges[pi.nranges++] = sb_range{0x5ffff0, 0x600000, SB_FN_ROOT, 0};
  SetProcInfoSpans(&pi);
  EXPECT_EQ(pi.special_shift, 10u);
  EXPECT_EQ(ClassifyOnHost(pi, 0x5ffc00, &bitmap), SB_FN_NONE);
  EXPECT_FALSE(bitmap);
  EXPECT_EQ(ClassifyOnHost(pi, 0x5ffff8, &bitmap), SB_FN_ROOT);
  EXPECT_EQ(ClassifyOnHost(pi, 0x5ff800, &bitmap), SB_FN_NONE);
  EXPECT_TRUE(bitmap);
  // No bitmap (all clear, as before SetProcInfoSpans): every pc in the span is searched.
  std::fill(std::begin(pi.special_free), std::end(pi.special_free), 0);
  EXPECT_EQ(ClassifyOnHost(pi, 0x500080, &bitmap), SB_FN_NONE);
  EXPECT_FALSE(bitmap);
  EXPECT_EQ(ClassifyOnHost(pi, 0x500100, &bitmap), SB_FN_MCALL);
}

// The root ranges kept beside the spans (sb_proc_info.roots, proc_info_spans.h): the first
// SB_MAX_ROOTS ranges of kind SB_FN_ROOT in Go text, as offsets; the frame loop's answer with
// them is the search's at every pc, the first and last byte of each range included.
TEST(RootRanges, AnswerAsTheSearchDoes) {
  sb_proc_info pi{};
  pi.text_start = 0x500000;
  pi.text_end = 0x510000;
  pi.ranges[pi.nranges++] = sb_range{0x500f00, 0x500f40, SB_FN_ROOT, 0};   // goexit, say
  pi.ranges[pi.nranges++] = sb_range{0x500040, 0x500080, SB_FN_ROOT, 0};   // mstart
  pi.ranges[pi.nranges++] = sb_range{0x500080, 0x5000c0, SB_FN_MCALL, 0};  // adjacent to a root
  pi.ranges[pi.nranges++] = sb_range{0x500100, 0x500101, SB_FN_ROOT, 0};   // one byte
  pi.ranges[pi.nranges++] = sb_range{0x500400, 0x500440, SB_FN_SYSTEMSTACK, 0};
  pi.ranges[pi.nranges++] = sb_range{0x501000, 0x501020, SB_FN_ROOT, 0};
  pi.ranges[pi.nranges++] = sb_range{0x502000, 0x502020, SB_FN_ROOT, 0};   // the fifth: search only
  pi.ranges[pi.nranges++] = sb_range{0x4ff000, 0x4ff010, SB_FN_ROOT, 0};   // below text: search only
  SetProcInfoSpans(&pi);
  ASSERT_EQ(pi.nroots, static_cast<uint32_t>(SB_MAX_ROOTS));
  EXPECT_EQ(pi.roots[0].lo, 0x40u);
  EXPECT_EQ(pi.roots[0].hi, 0x80u);
  EXPECT_EQ(pi.roots[1].lo, 0x100u);
  EXPECT_EQ(pi.roots[3].lo, 0x1000u);
  sb_proc_info no_roots = pi;
  no_roots.nroots = 0;
  int roots_seen = 0;
  for (uint64_t pc = 0x4fef00; pc < 0x502100; pc++) {
    int want = ClassifyOnHost(no_roots, pc);
    ASSERT_EQ(ClassifyOnHost(pi, pc), want) << std::hex << pc;
    roots_seen += want == SB_FN_ROOT;
  }
  EXPECT_EQ(roots_seen, 0x40 + 0x40 + 1 + 0x20 + 0x20 + 0x10);
}

// Unknown offsets: never cross a switch with guessed values.
TEST_F(UnwindCoreTest, NoOffsetsStopsAtASwitch) {
  info_.flags = SB_PI_GO | SB_PI_HAS_TLS;
  SetCurrentG(kG0);
  uint64_t g0_fp = kG0StackHi - 0x100;
  Frame(g0_fp, kGStackHi - 0x200, kSystemstack + 0x30);
  auto r = Run(kAllocFn + 0x50, g0_fp - 0x38, g0_fp);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_NO_OFFSETS);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x50, kSystemstack + 0x30}));
}

TEST_F(UnwindCoreTest, ZeroFramePointerOutsideGoIsEndOfChain) {
  SetCurrentG(kG);
  auto r = Run(0x7f1234560000, 0x7ffc00000000, 0);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_END_OF_CHAIN);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{0x7f1234560000}));
}

// A signal handler on gsignal (sampled in a handler function with a frame) returning into
// sigtramp: the interrupted context is read from the ucontext at sigtramp's entry SP (its SP +
// pcsp delta; amd64 uc_mcontext 8 + 40 bytes above it). The interrupted function is a frameless
// leaf on the goroutine stack: exact pc, caller by the pcsp rule, goroutine id from m.curg.
TEST_F(UnwindCoreTest, SignalFrameCrossesIntoTheInterruptedLeaf) {
  SetCurrentG(kGsignal);
  uint64_t h_fp = kGsignalStackHi - 0x400;              // the handler function's frame record
  uint64_t sigtramp_sp = h_fp + 16;
  uint64_t mctx = sigtramp_sp + 0x60 + 8 + 40;           // entry SP + pretcode + uc fields
  Frame(h_fp, kGsignalStackHi - 0x300, kSigtramp + 0x20);
  uint64_t caller_fp = kGStackHi - 0x100, leaf_sp = caller_fp - 0x28;
  mem_.Put64(mctx + 128, kLeaf + 4);                     // rip
  mem_.Put64(mctx + 120, leaf_sp);                       // rsp
  mem_.Put64(mctx + 80, caller_fp);                      // rbp: still the caller's
  mem_.Put64(leaf_sp, kMainF + 0x60);
  Frame(caller_fp, 0, kGoexit + 1);
  auto r = Run(kAllocFn + 0x50, h_fp - 0x38, h_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x50, kSigtramp + 0x20, kLeaf + 4, kMainF + 0x60,
                                              kGoexit + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(r.sample.exact[0], 0b101u);  // the interrupted pc is exact
  EXPECT_EQ(r.sample.goid, 42u);        // the interrupted goroutine
  EXPECT_EQ(counters_.crossing[SB_CROSS_SIGNAL][SB_CNT_CROSSED], 1u);
  EXPECT_EQ(counters_.crossing[SB_CROSS_LEAF][SB_CNT_CROSSED], 1u);
}

// The signal interrupted g0 (a function under systemstack): the walk continues on g0 and
// crosses systemstack into the goroutine.
TEST_F(UnwindCoreTest, SignalFrameOnG0CrossesSystemstackAfterwards) {
  SetCurrentG(kGsignal);
  uint64_t h_fp = kGsignalStackHi - 0x400;
  uint64_t mctx = h_fp + 16 + 0x60 + 8 + 40;
  Frame(h_fp, 0, kSigtramp + 0x20);
  uint64_t g0_fp = kG0StackHi - 0x100;
  mem_.Put64(mctx + 128, kAllocFn + 0x50);
  mem_.Put64(mctx + 120, g0_fp - 0x38);
  mem_.Put64(mctx + 80, g0_fp);
  uint64_t sched_sp = kGStackHi - 0x300, f_fp = kGStackHi - 0x200;
  Frame(g0_fp, f_fp, kSystemstack + 0x30);
  mem_.Put64(sched_sp, kMainF + 0x90);
  Frame(f_fp, 0, kGoexit + 1);
  SetSched(kG, sched_sp, kSystemstackSwitch, f_fp);
  auto r = Run(kAllocFn + 0x50, h_fp - 0x38, h_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x50, kSigtramp + 0x20, kAllocFn + 0x50,
                                              kSystemstack + 0x30, kMainF + 0x90, kGoexit + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(counters_.crossing[SB_CROSS_SIGNAL][SB_CNT_CROSSED], 1u);
  EXPECT_EQ(counters_.crossing[SB_CROSS_SYSTEMSTACK][SB_CNT_CROSSED], 1u);
}

// Sampled in the restorer (sigtramp returned): SP is at the ucontext itself.
TEST_F(UnwindCoreTest, SignalRestorerReadsTheUcontextAtSp) {
  SetCurrentG(kGsignal);
  uint64_t uc = kGsignalStackHi - 0x400;
  uint64_t f_fp = kGStackHi - 0x100;
  mem_.Put64(uc + 40 + 128, kMainF + 0x30);
  mem_.Put64(uc + 40 + 120, f_fp - 0x20);
  mem_.Put64(uc + 40 + 80, f_fp);
  Frame(f_fp, 0, kGoexit + 1);
  auto r = Run(kSigreturn + 7, uc, 0);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kSigreturn + 7, kMainF + 0x30, kGoexit + 1}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
}

// An unreadable ucontext is a named stop, never a silent root.
TEST_F(UnwindCoreTest, SignalFrameUnreadableIsReadFault) {
  SetCurrentG(kGsignal);
  uint64_t h_fp = kGsignalStackHi - 0x400;
  Frame(h_fp, 0, kSigtramp + 0x20);
  auto r = Run(kAllocFn + 0x50, h_fp - 0x38, h_fp);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_READ_FAULT);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x50, kSigtramp + 0x20}));
  EXPECT_EQ(counters_.crossing[SB_CROSS_SIGNAL][SB_CNT_STOPPED], 1u);
}

// C called Go (cgocallback): the goroutine stack's fake cgocallback frame leads, through
// m.g0.sched.sp, to cgocallback's g0 frame, crosscall2 (Go asm, by pcsp), the C stub and the C
// caller (frame pointers), and on to asmcgocall, where the Go code that called C continues.
// asmcgocall's save is the one in cgocallback's fake frame (the runtime restores the gobuf from
// it when the callback returns); curg.sched is whatever the callback saved since.
class CgoCallbackTest : public UnwindCoreTest {
 protected:
  // The callback main.f (sampled at +0x30, its frame record at cb_fp_) returns into
  // cgocallback's fake frame (SP cb_fp_ + 16, size 0x20 as on g0), whose return slot holds
  // asmcgocall's saved pc; above it, at the saved sp, asmcgocall's return address into F =
  // main.f (+0x90, delta 0x28: F's frame record at sched_sp_ + 0x28) under goexit.
  void SetUp() override {
    UnwindCoreTest::SetUp();
    SetCurrentG(kG);
    Frame(cb_fp_, kG0StackHi - 0x800 /* cgocallback's g0 BP */, kCgocallback + 0x20);
    mem_.Put64(cb_fp_ + 16 + 0x20, kSystemstackSwitch);  // the fake frame's return slot
    mem_.Put64(sched_sp_, kMainF + 0x90);
    Frame(sched_sp_ + 0x28, 0, kGoexit + 1);
    mem_.Put64(kG0 + 56, g0_sp_);
    mem_.Put64(g0_sp_ + 0x20, kCrosscall2 + 0x10);  // cgocallback's return address
    mem_.Put64(g0_sp_ + 0x18, c_fp_);               // its saved BP: the C stub's
    mem_.Put64(g0_sp_ + 0x28 + 0x50, 0x7f0000005100);  // crosscall2's return address into the C stub
    Frame(c_fp_, c_fp2_, 0x7f0000005200);           // the C stub returns into the C caller
    Frame(c_fp2_, sched_sp_ + 0x28, kAsmcgocall + 0x30);  // the C caller returns into asmcgocall
  }
  std::vector<uint64_t> Whole() const {
    return {kMainF + 0x30, kCgocallback + 0x20, kCrosscall2 + 0x10, 0x7f0000005100, 0x7f0000005200,
            kAsmcgocall + 0x30, kMainF + 0x90, kGoexit + 1};
  }
  const uint64_t cb_fp_ = kGStackHi - 0x400, sched_sp_ = cb_fp_ + 16 + 0x28;
  const uint64_t g0_sp_ = kG0StackHi - 0x800 - 0x18;  // cgocallback's g0 SP: m.g0.sched.sp
  const uint64_t c_fp_ = kG0StackHi - 0x600, c_fp2_ = kG0StackHi - 0x500;
};

TEST_F(CgoCallbackTest, CrossesBackToTheCFramesOnG0) {
  SetSched(kG, sched_sp_, kSystemstackSwitch, sched_sp_ + 0x28);  // no save since the C call
  auto r = Run(kMainF + 0x30, cb_fp_ - 0x20, cb_fp_);
  EXPECT_EQ(Frames(r), Whole());
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(r.sample.goid, 42u);
  EXPECT_EQ(counters_.crossing[SB_CROSS_CGOCALLBACK][SB_CNT_CROSSED], 1u);
  EXPECT_EQ(counters_.crossing[SB_CROSS_ASMCGOCALL][SB_CNT_CROSSED], 1u);
}

// The callback has called systemstack since (an allocation): systemstack's return zeroed
// curg.sched.sp. The fake frame still holds asmcgocall's save (on a Go 1.19 callback workload
// 85% of the samples used to stop at asmcgocall with stale_goroutine).
TEST_F(CgoCallbackTest, CurgSchedClearedByTheCallbackIsNotUsed) {
  SetSched(kG, 0, kSystemstackSwitch, 0);
  auto r = Run(kMainF + 0x30, cb_fp_ - 0x20, cb_fp_);
  EXPECT_EQ(Frames(r), Whole());
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
}

// The fake frame's saved pc is under the same rule as a gobuf's: not gosave_systemstack_switch's
// save, not crossed.
TEST_F(CgoCallbackTest, FakeFrameSaveUnderTheSavedPcRule) {
  SetSched(kG, sched_sp_, kSystemstackSwitch, sched_sp_ + 0x28);
  mem_.Put64(cb_fp_ + 16 + 0x20, kMainF + 0x90);
  auto r = Run(kMainF + 0x30, cb_fp_ - 0x20, cb_fp_);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_STALE_GOROUTINE);
  EXPECT_EQ(Frames(r).back(), kAsmcgocall + 0x30);
  EXPECT_EQ(counters_.crossing[SB_CROSS_ASMCGOCALL][SB_CNT_STOPPED], 1u);
}

// Sampled on g0 inside a systemstack the callback called: curg.sched is that systemstack's
// save, right for the systemstack crossing and wrong for asmcgocall's, which resumed from it
// into the callback again and again up to max_frames.
TEST_F(CgoCallbackTest, SystemstackInsideTheCallbackIsCrossedOnce) {
  SetCurrentG(kG0);
  uint64_t ss_sp = cb_fp_ - 0x100;            // the callback's systemstack save
  uint64_t cb2_fp = ss_sp + 0x28;             // main.f (+0x90) called systemstack: its record
  mem_.Put64(ss_sp, kMainF + 0x90);
  Frame(cb2_fp, cb_fp_, kMainF + 0x40);       // ... inside the callback main.f at +0x40
  SetSched(kG, ss_sp, kSystemstackSwitch, cb2_fp);
  uint64_t g0_fp = g0_sp_ - 0x200;            // the work on g0, below cgocallback's g0 frame
  Frame(g0_fp, 0, kSystemstack + 0x30);
  auto r = Run(kAllocFn + 0x50, g0_fp - 0x38, g0_fp);
  std::vector<uint64_t> want = {kAllocFn + 0x50, kSystemstack + 0x30, kMainF + 0x90, kMainF + 0x40};
  for (uint64_t pc : Whole())
    if (pc != kMainF + 0x30) want.push_back(pc);
  EXPECT_EQ(Frames(r), want);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(counters_.crossing[SB_CROSS_SYSTEMSTACK][SB_CNT_CROSSED], 1u);
  EXPECT_EQ(counters_.crossing[SB_CROSS_ASMCGOCALL][SB_CNT_CROSSED], 1u);
}

// The callback's goroutine parked inside the callback (m.curg 0: this M is in the scheduler,
// under mcall, and finds it through mcall's g0 slot). asmcgocall returns to the callback's
// goroutine, not to m.curg: before, it stopped there with stale_goroutine (Go 1.23 and 1.27: 10%
// of a callback workload's samples). Both recipes: from the fake frame (Go 1.19-1.20) and by the
// frame chain (1.21+: asmcgocall's frame record on the goroutine stack).
TEST_F(CgoCallbackTest, GoroutineParkedInTheCallbackFromTheG0Slot) {
  mem_.Put64(kM + 192, 0);                    // m.curg: dropped
  mem_.Put64(kG + 48, 0);                     // g.m: parked
  SetCurrentG(kG0);
  mem_.Put64(g0_sp_ - 8, kG);                 // mcall's slot: PUSHQ AX at m.g0.sched.sp - 8
  uint64_t park_fp = g0_sp_ - 0x40, g0_fp = g0_sp_ - 0x200;
  Frame(g0_fp, park_fp, kAllocFn + 0x80);     // the scheduler's work, called by the mcall callee
  Frame(park_fp, 0, kMcall + 0x20);           // which mcall called
  uint64_t park_sp = cb_fp_ - 0x100, park_fp2 = park_sp + 0x28;
  SetSched(kG, park_sp, kMcallRet, park_fp2);  // the callback main.f parked through mcall
  Frame(park_fp2, cb_fp_, kMainF + 0x40);
  uint64_t ac_rec = sched_sp_ + 0x80;         // 1.21+: asmcgocall's frame record, linked by C
  Frame(ac_rec, sched_sp_ + 0x28, kMainF + 0x90);
  std::vector<uint64_t> want = {kAllocFn + 0x50, kAllocFn + 0x80, kMcall + 0x20, kMcallRet, kMainF + 0x40};
  for (uint64_t pc : Whole())
    if (pc != kMainF + 0x30) want.push_back(pc);
  for (bool chain : {false, true}) {
    if (chain) {
      info_.flags &= ~SB_PI_SYSTEMSTACK_SCHED;
      Frame(c_fp2_, ac_rec, kAsmcgocall + 0x30);
    }
    counters_ = {};
    auto r = Run(kAllocFn + 0x50, g0_fp - 0x38, g0_fp);
    EXPECT_EQ(Frames(r), want) << chain;
    EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT) << chain;
    EXPECT_EQ(r.sample.goid, 42u);
    EXPECT_EQ(counters_.crossing[SB_CROSS_ASMCGOCALL][SB_CNT_CROSSED], 1u) << chain;
  }
}

// Sampled in cgocallback itself: it sets g before it moves SP (both ways), so the stack is the
// one SP is on. On the goroutine stack (the fake frame: here with g still g0, on the way back),
// the crossing as from a return address; on g0 (here with g already the goroutine, on the way
// in), an ordinary g0 frame whose C callers lead to asmcgocall, which crosses. Before, the
// first read the fake frame's saved pc as a caller (systemstack_switch), the second was walked
// as on the goroutine and ended at asmcgocall with bad_fp.
TEST_F(CgoCallbackTest, SampledInCgocallbackWalksTheStackSpIsOn) {
  SetSched(kG, 0, kSystemstackSwitch, 0);
  SetCurrentG(kG0);
  uint64_t fake_sp = cb_fp_ + 16;
  auto out = Run(kCgocallback + 0x30, fake_sp, 0);
  std::vector<uint64_t> want = Whole();
  want.erase(want.begin(), want.begin() + 2);
  want.insert(want.begin(), kCgocallback + 0x30);
  EXPECT_EQ(Frames(out), want);
  EXPECT_EQ(out.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(counters_.crossing[SB_CROSS_CGOCALLBACK][SB_CNT_CROSSED], 1u);
  // On g0 with g the goroutine already: asmcgocall's save is still the gobuf here.
  SetSched(kG, sched_sp_, kSystemstackSwitch, 0);
  SetCurrentG(kG);
  counters_ = {};
  auto in = Run(kCgocallback + 0x10, g0_sp_, kG0StackHi - 0x800);
  // crosscall2 by its pcsp, as the crossing takes it: the C stub is there (a frame-pointer
  // step past crosscall2 skips it here).
  want = Whole();
  want.erase(want.begin(), want.begin() + 1);
  want[0] = kCgocallback + 0x10;
  EXPECT_EQ(Frames(in), want);
  EXPECT_EQ(in.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(counters_.crossing[SB_CROSS_CGOCALLBACK][SB_CNT_ATTEMPTS], 0u);
  EXPECT_EQ(counters_.crossing[SB_CROSS_ASMCGOCALL][SB_CNT_CROSSED], 1u);
}

// Go 1.21+ amd64 crosscall2 has two frame records: R1 (PUSHQ BP at entry, returning into the C
// stub) and, below it, the assembler's R2, whose return slot is R1's saved BP (the stub's BP,
// a stack address). cgocallback saved R2. On g0, sampled in cgocallback, in crosscall2 past
// its prologue and at its entry: the stub and its callers, no stack address between them (a
// frame-pointer step from R2 emitted one; seen live on Go 1.23, 1 of 18,585 samples).
TEST_F(CgoCallbackTest, Crosscall2RecordsOnG0AreNotFollowed) {
  SetSched(kG, sched_sp_, kSystemstackSwitch, 0);
  const uint64_t entry_sp = g0_sp_ + 0x28 + 0x50, r1 = entry_sp - 8, r2 = r1 - 8;
  mem_.Put64(g0_sp_ + 0x18, r2);  // cgocallback's saved BP: crosscall2's R2
  mem_.Put64(r2, r1);             // R2 links R1; R2's return slot is R1 = the stub's BP
  mem_.Put64(r1, c_fp_);
  std::vector<uint64_t> below = {0x7f0000005100, 0x7f0000005200, kAsmcgocall + 0x30, kMainF + 0x90, kGoexit + 1};
  auto with = [&](std::vector<uint64_t> top) {
    top.insert(top.end(), below.begin(), below.end());
    return top;
  };
  SetCurrentG(kG);  // in cgocallback after it loaded the goroutine, SP still on g0
  auto in_cb = Run(kCgocallback + 0x10, g0_sp_, g0_sp_ + 0x18);
  EXPECT_EQ(Frames(in_cb), with({kCgocallback + 0x10, kCrosscall2 + 0x10}));
  EXPECT_EQ(in_cb.sample.stop_reason, SB_STOP_ROOT);
  SetCurrentG(kG0);  // in crosscall2: g is still g0
  auto in_c2 = Run(kCrosscall2 + 0x20, entry_sp - 0x50, r2);
  EXPECT_EQ(Frames(in_c2), with({kCrosscall2 + 0x20}));
  EXPECT_EQ(in_c2.sample.stop_reason, SB_STOP_ROOT);
  auto at_entry = Run(kCrosscall2, entry_sp, c_fp_);  // no frame yet: BP is the stub's
  EXPECT_EQ(Frames(at_entry), with({kCrosscall2}));
  EXPECT_EQ(at_entry.sample.stop_reason, SB_STOP_ROOT);
}

// Nested callbacks (Go -> C -> Go -> C -> Go): m.g0.sched.sp is the inner cgocallback's g0 SP;
// the outer one's is saved at the inner one's g0 SP + 0 (arm64 + 16: what the runtime's unwindm
// reads). Crossed at m.g0.sched.sp, the inner C frames would be walked a second time in place of
// the outer ones.
TEST_F(CgoCallbackTest, NestedCallbacksFindTheOuterG0Frame) {
  SetSched(kG, 0, kSystemstackSwitch, 0);
  uint64_t spi = cb_fp_ - 0x28, fake_i = spi - 0x28, cbi_fp = fake_i - 16;
  mem_.Put64(fake_i + 0x20, kSystemstackSwitch);   // the inner fake frame's saved pc
  mem_.Put64(spi, kMainF + 0x90);                  // the outer callback (main.f) called C ...
  Frame(cbi_fp, kG0StackHi - 0x1800, kCgocallback + 0x20);  // ... which called back: main.f
  uint64_t g0_spi = g0_sp_ - 0x1000, ci_fp = g0_spi + 0x200, ci_fp2 = g0_spi + 0x300;
  mem_.Put64(kG0 + 56, g0_spi);                    // m.g0.sched.sp: the inner callback's
  mem_.Put64(g0_spi, g0_sp_);                      // the outer one's, saved by the inner one
  mem_.Put64(g0_spi + 0x20, kCrosscall2 + 0x10);
  mem_.Put64(g0_spi + 0x18, ci_fp);
  mem_.Put64(g0_spi + 0x28 + 0x50, 0x7f0000007100);
  Frame(ci_fp, ci_fp2, 0x7f0000007200);
  Frame(ci_fp2, spi + 0x28, kAsmcgocall + 0x30);   // the inner asmcgocall, called on g0's stack
  auto r = Run(kMainF + 0x30, cbi_fp - 0x20, cbi_fp);
  std::vector<uint64_t> want = {kMainF + 0x30, kCgocallback + 0x20, kCrosscall2 + 0x10, 0x7f0000007100,
                                0x7f0000007200, kAsmcgocall + 0x30, kMainF + 0x90};
  std::vector<uint64_t> outer = Whole();
  want.insert(want.end(), outer.begin() + 1, outer.end());
  EXPECT_EQ(Frames(r), want);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(counters_.crossing[SB_CROSS_CGOCALLBACK][SB_CNT_CROSSED], 2u);
  EXPECT_EQ(counters_.crossing[SB_CROSS_ASMCGOCALL][SB_CNT_CROSSED], 2u);
}

// Sampled in the inner cgocallback on g0 after it stored its SP as m.g0.sched.sp (and before it
// switched to the goroutine): its C frames and asmcgocall, the outer callback's Go frames from
// the gobuf (asmcgocall's save: no callback crossed yet), then the outer callback crossed at
// the g0 SP the inner one saved at its SP + 0, not at m.g0.sched.sp (its own frame: the inner
// C frames a second time, a third cgocallback).
TEST_F(CgoCallbackTest, SampledInTheInnerCgocallbackAfterItsSaveCrossesTheOuterOne) {
  uint64_t spi = cb_fp_ - 0x28;
  mem_.Put64(spi, kMainF + 0x90);                  // the outer callback (main.f) called C
  SetSched(kG, spi, kSystemstackSwitch, 0);        // the inner asmcgocall's save
  uint64_t g0_spi = g0_sp_ - 0x1000, ci_fp = g0_spi + 0x200, ci_fp2 = g0_spi + 0x300;
  mem_.Put64(kG0 + 56, g0_spi);                    // m.g0.sched.sp: the inner cgocallback's SP
  mem_.Put64(g0_spi, g0_sp_);                      // the outer one's, saved there
  mem_.Put64(g0_spi + 0x20, kCrosscall2 + 0x10);
  mem_.Put64(g0_spi + 0x18, ci_fp);
  mem_.Put64(g0_spi + 0x28 + 0x50, 0x7f0000007100);
  Frame(ci_fp, ci_fp2, 0x7f0000007200);
  Frame(ci_fp2, spi + 0x28, kAsmcgocall + 0x30);
  SetCurrentG(kG0);
  auto r = Run(kCgocallback + 0x10, g0_spi, g0_spi + 0x18);
  std::vector<uint64_t> want = {kCgocallback + 0x10, kCrosscall2 + 0x10, 0x7f0000007100, 0x7f0000007200,
                                kAsmcgocall + 0x30, kMainF + 0x90};
  std::vector<uint64_t> outer = Whole();
  want.insert(want.end(), outer.begin() + 1, outer.end());
  EXPECT_EQ(Frames(r), want);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(counters_.crossing[SB_CROSS_CGOCALLBACK][SB_CNT_CROSSED], 1u);
  // Before its save (m.g0.sched.sp still the outer one's): the same stack.
  mem_.Put64(kG0 + 56, g0_sp_);
  mem_.Put64(g0_spi, 0x1234);  // not written yet
  EXPECT_EQ(Frames(Run(kCgocallback + 0x10, g0_spi, g0_spi + 0x18)), want);
}

// m.g0.sched.sp outside the g0 stack: the callback's C side cannot be trusted.
TEST_F(UnwindCoreTest, CgocallbackWithBadG0SpStops) {
  SetCurrentG(kG);
  uint64_t cb_fp = kGStackHi - 0x400;
  Frame(cb_fp, 0, kCgocallback + 0x20);
  mem_.Put64(kG0 + 56, 0x1000);
  auto r = Run(kMainF + 0x30, cb_fp - 0x20, cb_fp);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_STALE_GOROUTINE);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kMainF + 0x30, kCgocallback + 0x20}));
  EXPECT_EQ(counters_.crossing[SB_CROSS_CGOCALLBACK][SB_CNT_STOPPED], 1u);
}

// ---- arm64 (Go 1.19): frame records [R29] = caller's R29, [R29+8] = saved LR; g in R28.

class UnwindCoreArm64Test : public UnwindCoreTest {
 protected:
  void SetUp() override {
    UnwindCoreTest::SetUp();
    info_.arch = SB_ARCH_ARM64;
    info_.flags = SB_PI_GO | SB_PI_HAS_OFFSETS | SB_PI_SWITCH_SCHED_BP;  // no TLS: R28
    // arm64 pcsp: main.f allocates its frame in one MOVD.W at +4 (delta 0x30); the leaf none.
    // + systemstack's own small frame, park_m, gosched_m.
    // asmcgocall, asyncPreempt (a 0xf0 frame, as pushed by its first SUB), sigtramp (0xc0),
    // cgocallback (0x30) and crosscall2 (0xc0, NOFRAME: R29/R30 at its top).
    deltas_ = {{0x000, 0}, {0x044, 0x20}, {0x07c, 0},  {0x104, 0x30}, {0x1f0, 0}, {0x200, 0},
               {0x304, 0x40}, {0x3f0, 0}, {0x404, 0x20}, {0x43c, 0}, {0x440, 0}, {0x448, 0xf0},
               {0x47c, 0}, {0x484, 0xc0}, {0x4bc, 0}, {0x4c4, 0x30}, {0x4fc, 0},
               {0x504, 0x40}, {0x5f0, 0}, {0x604, 0x40}, {0x6f0, 0}, {0x704, 0xc0}, {0x73c, 0}};
    info_.delta_count = static_cast<uint32_t>(deltas_.size());
    // f's prologue: BL runtime.morestack (replaces the amd64 CALL bytes at the same place).
    uint64_t bl = kMorestackRetArm64 - 4;
    mem_.Put32(bl, 0x94000000u | (static_cast<uint32_t>((static_cast<int64_t>(kMorestack) -
                                                           static_cast<int64_t>(bl)) / 4) & 0x3FFFFFFu));
  }
  // Go arm64 frame of size `size` whose SP is sp: LR at [sp], caller's R29 at [sp-8].
  void GoFrame(uint64_t sp, uint64_t saved_fp, uint64_t saved_lr) {
    mem_.Put64(sp, saved_lr);
    mem_.Put64(sp - 8, saved_fp);
  }
};

// A frameless leaf: the caller is still in LR and R29 is the caller's frame pointer.
TEST_F(UnwindCoreArm64Test, FramelessLeafTakesItsCallerFromLr) {
  uint64_t caller_sp = kGStackHi - 0x200, caller_fp = caller_sp - 8;
  GoFrame(caller_sp, 0, kGoexit + 4);
  auto r = Run(kLeaf + 8, caller_sp, caller_fp, /*lr=*/kMainF + 0x60, /*g_reg=*/kG);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kLeaf + 8, kMainF + 0x60, kGoexit + 4}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(r.sample.goid, 42u);  // g found through R28
  EXPECT_EQ(counters_.crossing[SB_CROSS_LEAF][SB_CNT_CROSSED], 1u);
}

// Mid-body of a function with a frame: its saved LR is at [SP].
TEST_F(UnwindCoreArm64Test, FrameWithSavedLr) {
  uint64_t sp = kGStackHi - 0x300, fp = sp - 8;
  uint64_t caller_sp = sp + 0x30, caller_fp = caller_sp - 8;
  GoFrame(sp, caller_fp, kMainF + 0x70);
  GoFrame(caller_sp, 0, kGoexit + 4);
  auto r = Run(kMainF + 0x40, sp, fp, /*lr=*/0x1234 /* clobbered */, kG);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kMainF + 0x40, kMainF + 0x70, kGoexit + 4}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(counters_.crossing[SB_CROSS_LEAF][SB_CNT_CROSSED], 0u);
}

// systemstack before Go 1.25: R29 on g0 came from g0.sched.bp, so the g0 chain does not lead
// back; systemstack's own frame record on the goroutine stack is at curg.sched.bp.
TEST_F(UnwindCoreArm64Test, SystemstackContinuesAtSchedBp) {
  uint64_t g0_sp = kG0StackHi - 0x200, g0_fp = g0_sp - 8;
  GoFrame(g0_sp, /*stale g0 chain*/ kG0StackHi - 0x100, kSystemstack + 0x30);
  uint64_t ss_sp = kGStackHi - 0x300, ss_fp = ss_sp - 8;
  uint64_t f_sp = ss_sp + 0x20, f_fp = f_sp - 8;
  GoFrame(ss_sp, f_fp, kMainF + 0x90);  // systemstack's frame: returns into F
  GoFrame(f_sp, 0, kGoexit + 4);
  SetSched(kG, ss_sp, kSystemstackSwitch + 8, ss_fp);
  auto r = Run(kAllocFn + 0x50, g0_sp, g0_fp, 0, kG0);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x50, kSystemstack + 0x30, kMainF + 0x90,
                                              kGoexit + 4}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(counters_.crossing[SB_CROSS_SYSTEMSTACK][SB_CNT_CROSSED], 1u);
}

// systemstack from Go 1.25 (no SB_PI_SWITCH_SCHED_BP): the g0 callee's saved R29 is
// systemstack's frame record on the goroutine stack, so the frame chain crosses by itself. The
// SP walk must not go on after systemstack: at g0.sched.sp lies the fake return into mstart
// (found in the Go 1.27 arm64 systemstack core, which ended there).
TEST_F(UnwindCoreArm64Test, SystemstackFollowsTheFrameRecordOnNewerGo) {
  info_.flags = SB_PI_GO | SB_PI_HAS_OFFSETS;
  uint64_t g0_sp = kG0StackHi - 0x200, g0_fp = g0_sp - 8;
  uint64_t ss_fp = kGStackHi - 0x308, f_sp = kGStackHi - 0x2e0, f_fp = f_sp - 8;
  GoFrame(g0_sp, ss_fp, kSystemstack + 0x30);
  mem_.Put64(g0_sp + 0x40, kMstart + 4);  // systemstack's "LR slot" by SP: the fake mstart frame
  Frame(ss_fp, f_fp, kMainF + 0x90);       // systemstack's record: returns into F
  GoFrame(f_sp, 0, kGoexit + 4);
  auto r = Run(kAllocFn + 0x50, g0_sp, g0_fp, 0, kG0);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x50, kSystemstack + 0x30, kMainF + 0x90,
                                              kGoexit + 4}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(counters_.crossing[SB_CROSS_SYSTEMSTACK][SB_CNT_CROSSED], 1u);
}

// After dropg on arm64, the g0 slot holds the goroutine only when the mcall callee spilled
// its argument there: park_m does (accepted), gosched_m does not (stale_goroutine).
TEST_F(UnwindCoreArm64Test, McallSlotOnlyForSpillingCallees) {
  constexpr uint64_t kParkM = 0x401500, kGoschedM = 0x401600;
  AddRange(kParkM + 0x8, kParkM + 0x80, SB_FN_MCALL_SPILLER);  // after its spill instruction
  info_.ranges[info_.nranges - 1].arg = static_cast<uint32_t>(-8);  // slot at g0.sched.sp - 8
  mem_.Put64(kM + 192, 0);  // dropg
  mem_.Put64(kG + 48, 0);   // parked
  uint64_t g0_sched_sp = kG0StackHi - 0x40;
  mem_.Put64(kG0 + 56, g0_sched_sp);
  mem_.Put64(g0_sched_sp - 8, kG);
  uint64_t f_sp = kGStackHi - 0x300, f_fp = kGStackHi - 0x200;
  SetSched(kG, f_sp, kMcallRet, f_fp);
  GoFrame(f_sp, 0, kGoexit + 4);  // gopark (main.f here) saved LR at its SP
  uint64_t callee_sp = g0_sched_sp - 16 - 0x40, callee_fp = callee_sp - 8;
  GoFrame(callee_sp, 0, kMcall + 0x20);

  auto spilled = Run(kParkM + 0x10, callee_sp, callee_fp, 0, kG0);
  EXPECT_EQ(Frames(spilled), (std::vector<uint64_t>{kParkM + 0x10, kMcall + 0x20, kMcallRet, kGoexit + 4}));
  EXPECT_EQ(spilled.sample.stop_reason, SB_STOP_ROOT);

  auto not_spilled = Run(kGoschedM + 0x10, callee_sp, callee_fp, 0, kG0);
  EXPECT_EQ(not_spilled.sample.stop_reason, SB_STOP_STALE_GOROUTINE);
  EXPECT_EQ(Frames(not_spilled), (std::vector<uint64_t>{kGoschedM + 0x10, kMcall + 0x20}));
}

// gosched_m keeps no g of its own on arm64: it passes it to goschedImpl, which spills it into
// its argument slot in gosched_m's frame (g0.sched.sp - 16 - 0x40 + 8 here) and calls dropg,
// then schedule. The range is the return site of gosched_m's BL goschedImpl (kGoschedM + 0x24):
// the slot is read only from there (goschedImpl called), once m.curg is 0 (after its dropg,
// after its spill). "schedule" is kAllocFn (frame 0x40), gosched_m a 0x40 frame at 0x401600.
TEST_F(UnwindCoreArm64Test, GoschedCalleeGoroutineFromGoschedImplsSpill) {
  constexpr uint64_t kGoschedM = 0x401600;
  AddRange(kGoschedM + 0x21, kGoschedM + 0x24, SB_FN_MCALL_SPILLER);
  info_.ranges[info_.nranges - 1].arg = static_cast<uint32_t>(-0x48);
  info_.mcall_fns[0] = sb_mcall_fn{static_cast<uint32_t>(kGoschedM - kText), static_cast<uint32_t>(kGoschedM + 0x100 - kText)};
  mem_.Put64(kM + 192, 0);  // dropg
  mem_.Put64(kG + 48, 0);   // runnable, on no M
  uint64_t g0_sched_sp = kG0StackHi - 0x40;
  mem_.Put64(kG0 + 56, g0_sched_sp);
  uint64_t callee_sp = g0_sched_sp - 16 - 0x40, sched_sp = callee_sp - 0x40;
  mem_.Put64(callee_sp + 8, kG);  // goschedImpl's spill
  GoFrame(callee_sp, 0, kMcall + 0x20);
  GoFrame(sched_sp, callee_sp - 8, kGoschedM + 0x24);
  uint64_t f_sp = kGStackHi - 0x300;
  GoFrame(f_sp, 0, kGoexit + 4);
  SetSched(kG, f_sp, kMcallRet, kGStackHi - 0x200);  // Gosched's mcall(gosched_m)
  auto r = Run(kAllocFn + 0x50, sched_sp, sched_sp - 8, 0, kG0);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x50, kGoschedM + 0x24, kMcall + 0x20, kMcallRet, kGoexit + 4}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(r.sample.goid, 42u);
  // Running again elsewhere: it has left, the g0 stack is whole.
  mem_.Put64(kG + 48, kM + 0x1000);
  auto left = Run(kAllocFn + 0x50, sched_sp, sched_sp - 8, 0, kG0);
  EXPECT_EQ(left.sample.stop_reason, SB_STOP_GOROUTINE_LEFT);
  EXPECT_EQ(Frames(left), (std::vector<uint64_t>{kAllocFn + 0x50, kGoschedM + 0x24, kMcall + 0x20}));
  mem_.Put64(kG + 48, 0);
  // At the BL itself goschedImpl has not run: the slot is not read.
  auto at_bl = Run(kGoschedM + 0x20, callee_sp, callee_sp - 8, kGoschedM + 0x10, kG0);
  EXPECT_EQ(at_bl.sample.stop_reason, SB_STOP_STALE_GOROUTINE);
  // Without the range: nothing names the goroutine.
  for (uint32_t i = 0; i < info_.nranges; i++)  // (Run keeps the ranges sorted: found by start)
    if (info_.ranges[i].start == kGoschedM + 0x21) info_.ranges[i].kind = SB_FN_NONE;
  auto no_range = Run(kAllocFn + 0x50, sched_sp, sched_sp - 8, 0, kG0);
  EXPECT_EQ(no_range.sample.stop_reason, SB_STOP_STALE_GOROUTINE);
}

// morestack on arm64: f's caller is in sched.lr (morestack saved R3 = f's LR there).
TEST_F(UnwindCoreArm64Test, MorestackUsesSchedLr) {
  uint64_t g0_sp = kG0StackHi - 0x200, g0_fp = g0_sp - 8;
  GoFrame(g0_sp, 0, kMorestack + 0x30);
  uint64_t caller_fp = kGStackHi - 0x200, sched_sp = kGStackHi - 0x300;
  mem_.Put64(kG + 56 + 0, sched_sp);
  mem_.Put64(kG + 56 + 8, kMorestackRetArm64);
  mem_.Put64(kG + 56 + 40, kMainF + 0xb0);  // sched.lr
  mem_.Put64(kG + 56 + 48, caller_fp);
  GoFrame(sched_sp, 0, kGoexit + 4);  // f had no frame yet: its caller's SP is sched.sp
  mem_.Put32(kG + 144, 2);
  auto r = Run(kAllocFn + 0x50, g0_sp, g0_fp, 0, kG0);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x50, kMorestack + 0x30, kMorestackRetArm64,
                                              kMainF + 0xb0, kGoexit + 4}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
}

// The stale state on arm64: park_m spilled the goroutine to its g0 slot, which is parked again
// with morestack's gobuf (pc after BL morestack, its caller only in sched.lr). Not mcall's
// save: not crossed (the old rule walked one frame and ended with end_of_chain); the slot names
// it for certain after dropg, so it has left and the g0 stack is whole (goroutine_left).
TEST_F(UnwindCoreArm64Test, McallSlotGoroutineWithMorestacksSaveHasLeft) {
  constexpr uint64_t kParkM = 0x401500;
  AddRange(kParkM + 0x8, kParkM + 0x80, SB_FN_MCALL_SPILLER);
  info_.ranges[info_.nranges - 1].arg = static_cast<uint32_t>(-8);
  mem_.Put64(kM + 192, 0);  // dropg
  mem_.Put64(kG + 48, 0);   // parked
  uint64_t g0_sched_sp = kG0StackHi - 0x40;
  mem_.Put64(kG0 + 56, g0_sched_sp);
  mem_.Put64(g0_sched_sp - 8, kG);
  uint64_t callee_sp = g0_sched_sp - 16 - 0x40, callee_fp = callee_sp - 8;
  GoFrame(callee_sp, 0, kMcall + 0x20);
  uint64_t sched_sp = kGStackHi - 0x300;
  SetSched(kG, sched_sp, kMorestackRetArm64, kGStackHi - 0x200);
  mem_.Put64(kG + 56 + 40, kMainF + 0xb0);  // sched.lr
  GoFrame(sched_sp, 0, kGoexit + 4);
  auto r = Run(kParkM + 0x10, callee_sp, callee_fp, 0, kG0);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_GOROUTINE_LEFT);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kParkM + 0x10, kMcall + 0x20}));
  // Parked by mcall instead (LR = the return site of BL mcall): crossed.
  SetSched(kG, sched_sp, kMcallRet, kGStackHi - 0x200);
  auto ok = Run(kParkM + 0x10, callee_sp, callee_fp, 0, kG0);
  EXPECT_EQ(ok.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(Frames(ok), (std::vector<uint64_t>{kParkM + 0x10, kMcall + 0x20, kMcallRet, kGoexit + 4}));
}

// The saved-pc rule's callee check on arm64: park_m spilled the goroutine, which has since
// parked again through another mcall site (kMcallRet2, passing exitsyscall0).
TEST_F(UnwindCoreArm64Test, McallSlotGoroutineParkedThroughAnotherSiteHasLeft) {
  constexpr uint64_t kParkM = 0x401500;
  AddRange(kParkM + 0x8, kParkM + 0x80, SB_FN_MCALL_SPILLER);
  info_.ranges[info_.nranges - 1].arg = static_cast<uint32_t>(-8);
  constexpr uint64_t kSite2 = kMainF + 0xc0;
  info_.mcall_fns[0] = sb_mcall_fn{static_cast<uint32_t>(kParkM - kText), static_cast<uint32_t>(kParkM + 0x100 - kText)};
  info_.mcall_sites[1] = static_cast<uint32_t>(kSite2 - kText);
  info_.mcall_fns[1] = sb_mcall_fn{0x600, 0x700};  // exitsyscall0 at 0x401600
  info_.nmcall_sites = 2;
  mem_.Put64(kM + 192, 0);  // dropg
  mem_.Put64(kG + 48, 0);   // parked
  uint64_t g0_sched_sp = kG0StackHi - 0x40;
  mem_.Put64(kG0 + 56, g0_sched_sp);
  mem_.Put64(g0_sched_sp - 8, kG);
  uint64_t callee_sp = g0_sched_sp - 16 - 0x40, callee_fp = callee_sp - 8;
  GoFrame(callee_sp, 0, kMcall + 0x20);
  uint64_t f_sp = kGStackHi - 0x300;
  GoFrame(f_sp, 0, kGoexit + 4);
  SetSched(kG, f_sp, kSite2, kGStackHi - 0x200);
  auto r = Run(kParkM + 0x10, callee_sp, callee_fp, 0, kG0);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_GOROUTINE_LEFT);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kParkM + 0x10, kMcall + 0x20}));
  SetSched(kG, f_sp, kMcallRet, kGStackHi - 0x200);  // gopark's own site: park_m's
  auto ok = Run(kParkM + 0x10, callee_sp, callee_fp, 0, kG0);
  EXPECT_EQ(ok.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(Frames(ok), (std::vector<uint64_t>{kParkM + 0x10, kMcall + 0x20, kMcallRet, kGoexit + 4}));
}

// arm64 gogo<> (R5 = gobuf, R6 = gp): MOVD R6, R28 | BL save_g | MOVD (R5), R0 | MOVD R0, RSP |
// MOVD bp(R5), R29 | MOVD lr(R5), R30 | ... | B (R6). Decoded windows at kGogo; save_g at
// kSaveG; "execute" (kAllocFn, frame 0x40) calls runtime.gogo once, returning at +0x50, and is
// called by schedule (frame 0x40 here) from mstart.
constexpr uint64_t kSaveG = 0x401a40;  // [0x401a40, 0x401a60)

uint32_t Bl(uint64_t from, uint64_t to) {
  return 0x94000000u | (static_cast<uint32_t>((static_cast<int64_t>(to) - static_cast<int64_t>(from)) / 4) & 0x3FFFFFFu);
}

class GogoArm64Test : public UnwindCoreArm64Test {
 protected:
  void SetUp() override {
    UnwindCoreArm64Test::SetUp();
    info_.gogo_g0_lo = kGogo + 0x4;
    info_.gogo_g0_hi = kGogo + 0x10;
    info_.gogo_gp_lo = kGogo + 0x10;
    info_.gogo_bp_loaded = kGogo + 0x14;
    info_.gogo_lr_loaded = kGogo + 0x18;
    info_.gogo_gp_hi = kGogo + 0x38;
    info_.save_g_lo = kSaveG;
    info_.save_g_hi = kSaveG + 0x20;
    info_.gogo_callers[info_.ngogo_callers++] =
        sb_gogo_caller{static_cast<uint32_t>(kAllocFn - kText), static_cast<uint32_t>(kAllocFn + 0x50 - kText)};
    // main.f allocates its frame at +0x10 here (after its stack check's BL morestack at +8).
    for (auto& d : deltas_)
      if (d.pc_off == 0x104) d.pc_off = 0x110;
    deltas_.push_back({0x784, 0x40});  // schedule's frame
    deltas_.push_back({0x7bc, 0});
    info_.delta_count = static_cast<uint32_t>(deltas_.size());
    mem_.Put32(kSchedule + 0x1c, Bl(kSchedule + 0x1c, kAllocFn));  // schedule: BL execute
    GoFrame(exec_sp_, 0, kSchedule + 0x20);                         // execute's saved LR
    GoFrame(exec_sp_ + 0x40, 0, kMstart + 4);                       // schedule's
  }
  const uint64_t exec_sp_ = kG0StackHi - 0x200;
};

// SP still on g0, after gogo's BL save_g: LR is save_g's return site, the caller of
// runtime.gogo is found from the BL at [SP] - 4 and the table; the thread is on g0.
TEST_F(GogoArm64Test, G0WindowFindsTheCallerLrNoLongerHolds) {
  const std::vector<uint64_t> below = {kAllocFn + 0x50, kSchedule + 0x20, kMstart + 4};
  auto r = Run(kGogo + 0x8, exec_sp_, exec_sp_ - 8, /*lr=*/kGogo + 0x8, /*g_reg=*/kG);
  std::vector<uint64_t> want = {kGogo + 0x8};
  want.insert(want.end(), below.begin(), below.end());
  EXPECT_EQ(Frames(r), want);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_TRUE(r.sample.flags & SB_SAMPLE_ON_G0);
  // Inside save_g called from there: save_g, gogo, then the same.
  auto in_save_g = Run(kSaveG + 0x8, exec_sp_, exec_sp_ - 8, kGogo + 0x8, kG);
  want = {kSaveG + 0x8, kGogo + 0x8};
  want.insert(want.end(), below.begin(), below.end());
  EXPECT_EQ(Frames(in_save_g), want);
  EXPECT_EQ(in_save_g.sample.stop_reason, SB_STOP_ROOT);
  // At the BL itself LR still returns into execute.
  auto at_bl = Run(kGogo + 0x4, exec_sp_, exec_sp_ - 8, kAllocFn + 0x50, kG);
  want = {kGogo + 0x4};
  want.insert(want.end(), below.begin(), below.end());
  EXPECT_EQ(Frames(at_bl), want);
  EXPECT_EQ(at_bl.sample.stop_reason, SB_STOP_ROOT);
  // g read as g0 (with cgo the TLS slot is gp only once save_g ran): the same walk.
  EXPECT_EQ(Frames(Run(kGogo + 0x8, exec_sp_, exec_sp_ - 8, kGogo + 0x8, kG0)).size(), 4u);
  // Without the decoded window: walked as gp's from g0's SP, end_of_chain.
  info_.gogo_gp_hi = 0;
  EXPECT_EQ(Run(kGogo + 0x8, exec_sp_, exec_sp_ - 8, kGogo + 0x8, kG).sample.stop_reason, SB_STOP_END_OF_CHAIN);
}

// A caller of runtime.gogo not in the table (newstack calls it twice): gogo, end_of_chain.
TEST_F(GogoArm64Test, G0WindowWithAnAmbiguousCallerEnds) {
  mem_.Put32(kSchedule + 0x1c, Bl(kSchedule + 0x1c, kMainF));
  auto r = Run(kGogo + 0x8, exec_sp_, exec_sp_ - 8, kGogo + 0x8, kG);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kGogo + 0x8}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_END_OF_CHAIN);
}

// SP already gp's: gp resumes at sched.pc with that SP, R29 and LR from the gobuf until gogo
// has loaded them. A morestack save resumes in f's prologue, f's caller in LR (gobuf.lr).
TEST_F(GogoArm64Test, GpWindowResumesAtSchedPcWithGobufLr) {
  uint64_t sp = kGStackHi - 0x300, junk_fp = kG0StackHi - 0x100;
  GoFrame(sp, 0, kGoexit + 4);
  SetSched(kG, sp, kMcallRet, sp - 8);  // parked by mcall: gopark's frame is set up
  mem_.Put64(kG + 56 + 40, 0);           // sched.lr: mcall saves none
  auto mcall = Run(kGogo + 0x10, sp, junk_fp, kGogo + 0x8, kG);
  EXPECT_EQ(Frames(mcall), (std::vector<uint64_t>{kGogo + 0x10, kMcallRet, kGoexit + 4}));
  EXPECT_EQ(mcall.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(mcall.sample.goid, 42u);
  SetSched(kG, sp, kMorestackRetArm64, sp - 8);
  mem_.Put64(kG + 56 + 40, kMainF + 0xb0);  // sched.lr: f's caller
  mem_.Put32(kG + 144, 2);
  auto before_lr = Run(kGogo + 0x10, sp, junk_fp, kGogo + 0x8, kG);
  EXPECT_EQ(Frames(before_lr), (std::vector<uint64_t>{kGogo + 0x10, kMorestackRetArm64, kMainF + 0xb0, kGoexit + 4}));
  EXPECT_EQ(before_lr.sample.stop_reason, SB_STOP_ROOT);
  mem_.Put64(kG + 56 + 40, 0);  // gogo cleared gobuf.lr after loading it into LR
  auto after_lr = Run(kGogo + 0x30, sp, sp - 8, kMainF + 0xb0, kG);
  EXPECT_EQ(Frames(after_lr), (std::vector<uint64_t>{kGogo + 0x30, kMorestackRetArm64, kMainF + 0xb0, kGoexit + 4}));
  EXPECT_EQ(after_lr.sample.stop_reason, SB_STOP_ROOT);
  // Not a save of mcall or morestack (a new goroutine's first run): gogo only, stale.
  SetSched(kG, sp, kMainF, sp - 8);
  auto other = Run(kGogo + 0x10, sp, junk_fp, kGogo + 0x8, kG);
  EXPECT_EQ(Frames(other), (std::vector<uint64_t>{kGogo + 0x10}));
  EXPECT_EQ(other.sample.stop_reason, SB_STOP_STALE_GOROUTINE);
}

// arm64 runtime.systemstack's windows (unwinder/systemstack_window.h), decoded at
// kSystemstack (frame 0x20 from +4): BL gosave_systemstack_switch | +0x14 MOVD R5, R28 (g0) |
// +0x18 BL save_g | MOVD gobuf_sp(R28), R3 | +0x20 MOVD R3, RSP | ... BL (R3) | MOVD g_m(R28),
// R3 | +0x2c MOVD m_curg(R3), R28 | +0x30 BL save_g | MOVD gobuf_sp(R28), R0 | +0x38 MOVD R0,
// RSP. F called systemstack, whose frame (SP ss_sp_) returns into F at kMainF + 0x90.
class SystemstackWindowArm64Test : public UnwindCoreArm64Test {
 protected:
  void SetUp() override {
    UnwindCoreArm64Test::SetUp();
    info_.sstack_g0_lo = kSystemstack + 0x18;
    info_.sstack_g0_hi = kSystemstack + 0x24;
    info_.sstack_gp_lo = kSystemstack + 0x30;
    info_.sstack_gp_hi = kSystemstack + 0x3c;
    info_.save_g_lo = kSaveG;
    info_.save_g_hi = kSaveG + 0x20;
    GoFrame(ss_sp_, f_sp_ - 8, kMainF + 0x90);  // systemstack's frame record: into F
    GoFrame(f_sp_, 0, kGoexit + 4);
    SetSched(kG, ss_sp_, kSystemstackSwitch + 8, ss_sp_ - 8);  // gosave_systemstack_switch's save
    mem_.Put64(g0_sp_, kMstart + 4);  // at g0.sched.sp: the fake return into mstart
  }
  const uint64_t ss_sp_ = kGStackHi - 0x300, f_sp_ = kGStackHi - 0x2e0, g0_sp_ = kG0StackHi - 0x40;
  const std::vector<uint64_t> below_ = {kMainF + 0x90, kGoexit + 4};
  static std::vector<uint64_t> With(std::vector<uint64_t> top, const std::vector<uint64_t>& rest) {
    top.insert(top.end(), rest.begin(), rest.end());
    return top;
  }
  // One sample in a window, walked whole: `top`, then F and goexit, named after the goroutine,
  // on g0 or not.
  void ExpectWhole(uint64_t pc, uint64_t sp, uint64_t fp, uint64_t lr, uint64_t g, std::vector<uint64_t> top,
                   bool on_g0) {
    auto r = Run(pc, sp, fp, lr, g);
    EXPECT_EQ(Frames(r), With(std::move(top), below_)) << std::hex << pc;
    EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT) << std::hex << pc;
    EXPECT_EQ(r.sample.goid, 42u) << std::hex << pc;
    EXPECT_EQ((r.sample.flags & SB_SAMPLE_ON_G0) != 0, on_g0) << std::hex << pc;
  }
};

// Switch in: R28 is g0, SP still the goroutine's: walked as on the goroutine (systemstack's
// frame by SP, then F), named after it, not on g0; inside save_g (LR its return site) too.
TEST_F(SystemstackWindowArm64Test, SwitchInWalksTheGoroutine) {
  auto r = Run(kSystemstack + 0x1c, ss_sp_, ss_sp_ - 8, /*lr=*/kSystemstack + 0x1c, /*g_reg=*/kG0);
  EXPECT_EQ(Frames(r), With({kSystemstack + 0x1c}, below_));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(r.sample.goid, 42u);
  EXPECT_FALSE(r.sample.flags & SB_SAMPLE_ON_G0);
  EXPECT_EQ(counters_.crossing[SB_CROSS_SYSTEMSTACK][SB_CNT_ATTEMPTS], 0u);  // nothing to cross
  auto in_save_g = Run(kSaveG + 0x4, ss_sp_, ss_sp_ - 8, kSystemstack + 0x1c, kG0);
  EXPECT_EQ(Frames(in_save_g), With({kSaveG + 0x4, kSystemstack + 0x1c}, below_));
  EXPECT_FALSE(in_save_g.sample.flags & SB_SAMPLE_ON_G0);
  // save_g called from elsewhere (gogo's) with g0 in R28 is not this window: on g0.
  EXPECT_TRUE(Run(kSaveG + 0x4, ss_sp_, ss_sp_ - 8, kGogo + 0x8, kG0).sample.flags & SB_SAMPLE_ON_G0);
  // Without the decoded window the walk took the thread for g0's and crossed a switch that
  // had not happened yet (the same frames here, by luck of the save already being made).
  info_.sstack_g0_hi = 0;
  EXPECT_TRUE(Run(kSystemstack + 0x1c, ss_sp_, ss_sp_ - 8, kSystemstack + 0x1c, kG0).sample.flags & SB_SAMPLE_ON_G0);
}

// Switch back: R28 is m.curg again, SP still on g0 where fn returned: walked as on g0, the
// systemstack crossing leads to F (curg.sched.bp before Go 1.25, the frame record after).
TEST_F(SystemstackWindowArm64Test, SwitchBackWalksG0AndCrosses) {
  ExpectWhole(kSystemstack + 0x34, g0_sp_, kG0StackHi - 0x100, kSystemstack + 0x34, kG, {kSystemstack + 0x34}, true);
  EXPECT_EQ(counters_.crossing[SB_CROSS_SYSTEMSTACK][SB_CNT_CROSSED], 1u);
  ExpectWhole(kSaveG + 0x4, g0_sp_, kG0StackHi - 0x100, kSystemstack + 0x34, kG, {kSaveG + 0x4, kSystemstack + 0x34},
              true);
  // Go 1.25+: no sched.bp recipe, R29 is still systemstack's record on the goroutine stack.
  info_.flags = SB_PI_GO | SB_PI_HAS_OFFSETS;
  auto newer = Run(kSystemstack + 0x34, g0_sp_, ss_sp_ - 8, kSystemstack + 0x34, kG);
  EXPECT_EQ(Frames(newer), With({kSystemstack + 0x34}, below_));
  EXPECT_EQ(newer.sample.stop_reason, SB_STOP_ROOT);
  // Without the decoded window: walked as the goroutine's from g0's SP, a wrong whole stack
  // (systemstack called by mstart), which is what this window's decoding is for.
  info_.sstack_gp_hi = 0;
  auto before = Run(kSystemstack + 0x34, g0_sp_, ss_sp_ - 8, kSystemstack + 0x34, kG);
  EXPECT_EQ(Frames(before), (std::vector<uint64_t>{kSystemstack + 0x34, kMstart + 4}));
}

// arm64 runtime.asmcgocall's windows (FindAsmcgocallWindow): the same shape around save_g as
// systemstack's, here at kAsmcgocall (frame 0x20 from +4, returning into cgocall at kMainF +
// 0x90): +0x18 BL save_g after MOVD R3, R28 (g0) | MOVD gobuf_sp(R28), R0 | +0x20 MOVD R0, RSP;
// after the C call +0x2c BL save_g after MOVD 0(RSP), R28 (the goroutine) | two loads, SUB,
// MOVD R9, R0 | +0x40 MOVD R5, RSP. On the way back SP is g0's aligned frame holding the saved
// g ([SP]) and the goroutine's stack depth ([SP+8]).
TEST_F(SystemstackWindowArm64Test, AsmcgocallWindowsWalkAsTheirSpSays) {
  info_.acgo_g0_lo = kAsmcgocall + 0x18;
  info_.acgo_g0_hi = kAsmcgocall + 0x24;
  info_.acgo_gp_lo = kAsmcgocall + 0x2c;
  info_.acgo_gp_hi = kAsmcgocall + 0x44;
  uint64_t a_sp = ss_sp_;  // asmcgocall's frame on the goroutine (systemstack's in SetUp)
  SetSched(kG, a_sp, kSystemstackSwitch + 8, a_sp - 8);
  mem_.Put64(g0_sp_, kG);                      // asmcgocall's saved g
  mem_.Put64(g0_sp_ + 8, kGStackHi - a_sp);    // and the depth
  // Switch in (R28 g0, SP still the goroutine's): as on the goroutine, also inside save_g.
  ExpectWhole(kAsmcgocall + 0x1c, a_sp, a_sp - 8, kAsmcgocall + 0x1c, kG0, {kAsmcgocall + 0x1c}, false);
  ExpectWhole(kSaveG + 0x4, a_sp, a_sp - 8, kAsmcgocall + 0x1c, kG0, {kSaveG + 0x4, kAsmcgocall + 0x1c}, false);
  // Switch back (R28 the goroutine, SP on g0 where C returned): as on g0, crossing asmcgocall.
  ExpectWhole(kAsmcgocall + 0x34, g0_sp_, kG0StackHi - 0x100, kAsmcgocall + 0x30, kG, {kAsmcgocall + 0x34}, true);
  EXPECT_EQ(counters_.crossing[SB_CROSS_ASMCGOCALL][SB_CNT_CROSSED], 1u);
  ExpectWhole(kSaveG + 0x4, g0_sp_, kG0StackHi - 0x100, kAsmcgocall + 0x30, kG, {kSaveG + 0x4, kAsmcgocall + 0x30},
              true);
  // Without the decoded windows: the way back reads g0's words as the goroutine's frames (the
  // saved g as asmcgocall's return address).
  info_.acgo_gp_hi = 0;
  auto before = Run(kAsmcgocall + 0x34, g0_sp_, a_sp - 8, kAsmcgocall + 0x30, kG);
  EXPECT_EQ(Frames(before), (std::vector<uint64_t>{kAsmcgocall + 0x34, kG}));
}

// arm64 morestack's save is checked in the text too: a BL elsewhere is not morestack's call.
TEST_F(UnwindCoreArm64Test, MorestackNeedsTheBlToMorestack) {
  uint64_t g0_sp = kG0StackHi - 0x200, g0_fp = g0_sp - 8;
  GoFrame(g0_sp, 0, kMorestack + 0x30);
  uint64_t sched_sp = kGStackHi - 0x300;
  mem_.Put32(kMorestackRetArm64, 0x94000000u | 0x10);  // BL main.f+0x4c, not morestack
  SetSched(kG, sched_sp, kMorestackRetArm64 + 4, kGStackHi - 0x200);
  mem_.Put64(kG + 56 + 40, kMainF + 0xb0);
  mem_.Put32(kG + 144, 2);
  auto r = Run(kAllocFn + 0x50, g0_sp, g0_fp, 0, kG0);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_STALE_GOROUTINE);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x50, kMorestack + 0x30}));
}

// arm64: newstack preempted the goroutine (dropg: m.curg 0). morestack called newstack below
// a 16-byte frame of its own, so newstack's CFA is g0.sched.sp - 16, where the SP walk stands
// at morestack's frame. morebuf holds f's caller's SP (= sched.sp: f had no frame) and pc
// (= sched.lr). Here "newstack" is the 0x40-frame function at 0x401500.
TEST_F(UnwindCoreArm64Test, PreemptedGoroutineFoundThroughMorebuf) {
  constexpr uint64_t kNs = 0x401500;
  info_.newstack_lo = static_cast<uint32_t>(kNs + 0x10 - kText);
  info_.newstack_hi = static_cast<uint32_t>(kNs + 0xc0 - kText);
  info_.morebuf_cfa_off = -0x30;
  info_.gobuf_g = 16;
  mem_.Put64(kM + 192, 0);  // dropg
  mem_.Put64(kG + 48, 0);
  mem_.Put32(kG + 144, 1);
  uint64_t g0_sp = kG0StackHi - 0x200, ns_sp = g0_sp + 0x40, cfa = ns_sp + 0x40;
  GoFrame(g0_sp, 0, kNs + 0x80);
  GoFrame(ns_sp, 0, kMorestack + 0x30);
  mem_.Put64(kG0 + 56, cfa + 16);
  uint64_t sched_sp = kGStackHi - 0x300;
  SetSched(kG, sched_sp, kMorestackRetArm64, kGStackHi - 0x200);
  mem_.Put64(kG + 56 + 40, kMainF + 0xb0);  // sched.lr
  GoFrame(sched_sp, 0, kGoexit + 4);
  uint64_t mb = cfa - 0x30;
  mem_.Put64(mb + 0, sched_sp);
  mem_.Put64(mb + 8, kMainF + 0xb0);
  mem_.Put64(mb + 16, kG);
  auto r = Run(kAllocFn + 0x50, g0_sp, g0_sp - 8, 0, kG0);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x50, kNs + 0x80, kMorestack + 0x30, kMorestackRetArm64,
                                              kMainF + 0xb0, kGoexit + 4}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(r.sample.goid, 42u);
  // morebuf's pc is not sched.lr: the goroutine stopped elsewhere since.
  mem_.Put64(mb + 8, kMainF + 0xc0);
  auto stale = Run(kAllocFn + 0x50, g0_sp, g0_sp - 8, 0, kG0);
  EXPECT_EQ(stale.sample.stop_reason, SB_STOP_GOROUTINE_LEFT);
  EXPECT_EQ(Frames(stale), (std::vector<uint64_t>{kAllocFn + 0x50, kNs + 0x80, kMorestack + 0x30}));
  // The amd64 CFA (g0.sched.sp itself) is not arm64's.
  mem_.Put64(mb + 8, kMainF + 0xb0);
  mem_.Put64(kG0 + 56, cfa);
  EXPECT_EQ(Run(kAllocFn + 0x50, g0_sp, g0_sp - 8, 0, kG0).sample.stop_reason, SB_STOP_STALE_GOROUTINE);
}

// vDSO on arm64: m.vdsoSP is the SP of the frame m.vdsoPC returns into (nanotime1's caller).
TEST_F(UnwindCoreArm64Test, VdsoRecordAtVdsoSpMinus8) {
  info_.off.m_vdsosp = 800;
  info_.off.m_vdsopc = 808;
  info_.vdso_start = 0x7fff00000000;
  info_.vdso_end = 0x7fff00002000;
  uint64_t vsp = kGStackHi - 0x300, caller_fp = kGStackHi - 0x200;
  mem_.Put64(kM + 800, vsp);
  mem_.Put64(kM + 808, kMainF + 0xc0);
  mem_.Put64(vsp - 8, caller_fp);
  GoFrame(vsp, caller_fp, kGoexit + 4);  // vdsoSP is the SP of the frame vdsoPC is in
  auto r = Run(0x7fff00000400, kG0StackHi - 0x100, kG0StackHi - 0x80, 0x7fff00000500, kG);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{0x7fff00000400, kMainF + 0xc0, kGoexit + 4}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
}

// arm64 signal frame: sigtramp's entry SP = its SP + pcsp delta; the ucontext follows the
// 128-byte siginfo, its registers 176 + 8 bytes into it. The interrupted frameless leaf gets
// its caller from the interrupted LR.
TEST_F(UnwindCoreArm64Test, SignalFrameCrossesIntoTheInterruptedLeaf) {
  uint64_t h_sp = kGsignalStackHi - 0x800;
  GoFrame(h_sp, 0, kSigtramp + 0x20);                    // the handler returns into sigtramp
  uint64_t regs = h_sp + 0x40 + 0xc0 + 128 + 176 + 8;    // x0 in uc_mcontext
  uint64_t caller_sp = kGStackHi - 0x200;
  mem_.Put64(regs + 32 * 8, kLeaf + 8);                  // pc
  mem_.Put64(regs + 31 * 8, caller_sp);                  // sp: the leaf has no frame
  mem_.Put64(regs + 29 * 8, caller_sp - 8);              // x29
  mem_.Put64(regs + 30 * 8, kMainF + 0x60);              // x30: the leaf's return address
  GoFrame(caller_sp, 0, kGoexit + 4);
  auto r = Run(kAllocFn + 0x50, h_sp, h_sp - 8, 0x1234, kGsignal);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x50, kSigtramp + 0x20, kLeaf + 8, kMainF + 0x60,
                                              kGoexit + 4}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(r.sample.exact[0], 0b101u);
  EXPECT_EQ(r.sample.goid, 42u);
  EXPECT_EQ(counters_.crossing[SB_CROSS_SIGNAL][SB_CNT_CROSSED], 1u);
}

// arm64 asyncPreempt: pushCall lowered the interrupted SP by 16 and stored the interrupted LR
// there; asyncPreempt's saved LR is the interrupted pc. The interrupted frameless leaf's
// caller is that stored LR, and its SP is 16 above asyncPreempt's caller SP.
TEST_F(UnwindCoreArm64Test, AsyncPreemptedLeafKeepsItsCaller) {
  uint64_t isp = kGStackHi - 0x200;                  // the interrupted leaf's SP
  uint64_t pushed = isp - 16;
  mem_.Put64(pushed, kMainF + 0x60);                 // the interrupted LR
  uint64_t ap_sp = pushed - 0xf0;
  mem_.Put64(ap_sp, kLeaf + 8);                      // asyncPreempt's saved LR = resume pc
  uint64_t fn_sp = ap_sp - 0x40;                     // asyncPreempt2, sampled mid-body
  GoFrame(fn_sp, ap_sp - 8, kAsyncPreempt + 0x20);
  GoFrame(isp, 0, kGoexit + 4);                      // main.f's frame (delta 0x30 at +0x5f)
  auto r = Run(kAllocFn + 0x50, fn_sp, fn_sp - 8, 0x1234, kG);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kAllocFn + 0x50, kAsyncPreempt + 0x20, kLeaf + 8, kMainF + 0x60,
                                              kGoexit + 4}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(r.sample.exact[0], 0b101u);
  EXPECT_EQ(counters_.crossing[SB_CROSS_ASYNCPREEMPT][SB_CNT_CROSSED], 1u);
}

// arm64 cgocallback: cgocallback's g0 frame at m.g0.sched.sp (LR at [SP], R29 below), then
// crosscall2, whose LR and R29 sit at the top of its NOFRAME frame, then the C frames by frame
// records down to asmcgocall, whose frame record on the goroutine stack is found from the save
// in cgocallback's fake frame (its saved pc at the fake frame's SP, the saved sp 0x30 above:
// the runtime's MOVD R5, -48(R4)). curg.sched is not that save once the callback has saved
// anything since; and m.curg is 0 once the goroutine parked inside the callback (the locked M
// in stoplockedm of arm64-go1.19.8-cgocallback lwp 28029 stopped there with stale_goroutine).
// arm64 crosscall2 (NOFRAME, frame 0xc0) keeps R29 and LR at its frame's top from its STP before
// its first BL until its LDP after its last. A return address in it (from cgocallback, or here
// load_g, sampled with g0 in R28) reads them there; sampled in crosscall2 itself they are there
// only while LR points into crosscall2 (a BL has returned), else LR and R29 are the C stub's.
TEST_F(UnwindCoreArm64Test, Crosscall2KeepsLrAtItsFrameTop) {
  uint64_t c2_sp = kG0StackHi - 0x800, c_fp = kG0StackHi - 0x600, c_fp2 = kG0StackHi - 0x500;
  mem_.Put64(c2_sp, 0x5a5a5a5a);                       // [SP]: not a return address
  mem_.Put64(c2_sp + 0xc0 - 8, 0x7f0000005100);        // saved R30: into the C stub
  mem_.Put64(c2_sp + 0xc0 - 16, c_fp);                 // saved R29
  Frame(c_fp, c_fp2, 0x7f0000005200);
  Frame(c_fp2, 0, 0);                                  // C ends here (no asmcgocall: a C thread)
  std::vector<uint64_t> below = {0x7f0000005100, 0x7f0000005200};
  auto with = [&](std::vector<uint64_t> top) {
    top.insert(top.end(), below.begin(), below.end());
    return top;
  };
  // In a leaf called from crosscall2 (no frame: its caller in LR, a return site in crosscall2).
  auto leaf = Run(kLeaf + 8, c2_sp, c2_sp + 0xc0 - 16, /*lr=*/kCrosscall2 + 0x18, /*g_reg=*/kG0);
  EXPECT_EQ(Frames(leaf), with({kLeaf + 8, kCrosscall2 + 0x18}));
  // In crosscall2 past BL load_g (LR its return site): the saved pair at the top.
  auto after = Run(kCrosscall2 + 0x20, c2_sp, c_fp, /*lr=*/kCrosscall2 + 0x18, /*g_reg=*/kG0);
  EXPECT_EQ(Frames(after), with({kCrosscall2 + 0x20}));
  // In its prologue before the STP (LR and R29 still the stub's; the top not written yet).
  mem_.Put64(c2_sp + 0xc0 - 8, 0x1111);
  auto before = Run(kCrosscall2 + 0x8, c2_sp, c_fp, /*lr=*/0x7f0000005100, /*g_reg=*/kG0);
  EXPECT_EQ(Frames(before), with({kCrosscall2 + 0x8}));
}

TEST_F(UnwindCoreArm64Test, CgocallbackCrossesBackToTheCFramesOnG0) {
  uint64_t cb_sp = kGStackHi - 0x400;                // the Go callback (main.f), frame 0x30
  GoFrame(cb_sp, 0, kCgocallback + 0x20);            // returns into cgocallback's fake frame
  uint64_t fake_sp = cb_sp + 0x30, ac_sp = fake_sp + 0x30, f_sp = ac_sp + 0x20;
  mem_.Put64(fake_sp, kSystemstackSwitch + 8);       // asmcgocall's saved pc
  uint64_t g0_sp = kG0StackHi - 0x800;
  mem_.Put64(kG0 + 56, g0_sp);
  uint64_t c_fp = kG0StackHi - 0x600, c_fp2 = kG0StackHi - 0x500;
  GoFrame(g0_sp, c_fp, kCrosscall2 + 0x10);
  uint64_t c2_sp = g0_sp + 0x30;
  mem_.Put64(c2_sp + 0xc0 - 8, 0x7f0000005100);      // crosscall2's saved R30
  mem_.Put64(c2_sp + 0xc0 - 16, c_fp);               // and R29
  Frame(c_fp, c_fp2, 0x7f0000005200);
  Frame(c_fp2, 0, kAsmcgocall + 0x30);
  GoFrame(ac_sp, f_sp - 8, kMainF + 0x90);          // asmcgocall's frame on the goroutine stack
  GoFrame(f_sp, 0, kGoexit + 4);
  std::vector<uint64_t> want = {kMainF + 0x40, kCgocallback + 0x20, kCrosscall2 + 0x10, 0x7f0000005100,
                                0x7f0000005200, kAsmcgocall + 0x30, kMainF + 0x90, kGoexit + 4};
  SetSched(kG, ac_sp, kSystemstackSwitch + 8, ac_sp - 8);  // no save since the C call
  auto r = Run(kMainF + 0x40, cb_sp, cb_sp - 8, 0x1234, kG);
  EXPECT_EQ(Frames(r), want);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(counters_.crossing[SB_CROSS_CGOCALLBACK][SB_CNT_CROSSED], 1u);
  SetSched(kG, 0, kSystemstackSwitch + 8, 0);        // a systemstack since: gogo cleared sp
  r = Run(kMainF + 0x40, cb_sp, cb_sp - 8, 0x1234, kG);
  EXPECT_EQ(Frames(r), want);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  // Parked inside the callback through mcall (m.curg 0): this M, in the scheduler under the
  // mcall callee park_m (which spilled the goroutine to the g0 slot at m.g0.sched.sp - 8, over
  // cgocallback's saved R29: crosscall2's own is at its frame's top), finds it through that slot.
  constexpr uint64_t kParkM = 0x401500;  // frame 0x40
  AddRange(kParkM + 0x8, kParkM + 0x80, SB_FN_MCALL_SPILLER);
  info_.ranges[info_.nranges - 1].arg = static_cast<uint32_t>(-8);
  mem_.Put64(kM + 192, 0);
  mem_.Put64(kG + 48, 0);
  mem_.Put64(g0_sp - 8, kG);
  uint64_t park_sp = cb_sp - 0x30;                   // gopark (main.f, frame 0x30) in the callback
  SetSched(kG, park_sp, kMcallRet, park_sp - 8);
  GoFrame(park_sp, cb_sp - 8, kMainF + 0x40);
  uint64_t callee_sp = g0_sp - 16 - 0x40;            // park_m's frame below mcall's 16 bytes
  GoFrame(callee_sp, 0, kMcall + 0x20);
  counters_ = {};
  r = Run(kParkM + 0x10, callee_sp, callee_sp - 8, 0, kG0);
  std::vector<uint64_t> parked = {kParkM + 0x10, kMcall + 0x20, kMcallRet};
  parked.insert(parked.end(), want.begin(), want.end());
  EXPECT_EQ(Frames(r), parked);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(r.sample.goid, 42u);
  EXPECT_EQ(counters_.crossing[SB_CROSS_ASMCGOCALL][SB_CNT_CROSSED], 1u);
}

// arm64 asmcgocall on Go 1.25+ (no sched.bp flag: systemstack's chain links by itself there)
// still loads g0.sched.bp into R29: the C frames' chain does not lead back, asmcgocall's own
// frame record at curg.sched.bp does.
TEST_F(UnwindCoreArm64Test, AsmcgocallUsesSchedBpOnNewerGo) {
  info_.flags &= ~SB_PI_SWITCH_SCHED_BP;
  uint64_t c_fp = kG0StackHi - 0x600;
  Frame(c_fp, kG0StackHi - 0x100 /* g0.sched.bp: stale */, kAsmcgocall + 0x30);
  uint64_t ac_sp = kGStackHi - 0x300, f_sp = ac_sp + 0x20;
  GoFrame(ac_sp, f_sp - 8, kMainF + 0x90);
  GoFrame(f_sp, 0, kGoexit + 4);
  SetSched(kG, ac_sp, kSystemstackSwitch + 8, ac_sp - 8);
  auto r = Run(0x7f0000005000, c_fp - 0x20, c_fp, 0x7f0000005100, kG0);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{0x7f0000005000, kAsmcgocall + 0x30, kMainF + 0x90, kGoexit + 4}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(counters_.crossing[SB_CROSS_ASMCGOCALL][SB_CNT_CROSSED], 1u);
}

// A C call that calls back into Go: from the first callback's return on, curg.sched.bp is
// cgocall's frame pointer (reentersyscall saves the one entersyscall took; cgocallback then
// restores only sched.pc and sched.sp), not asmcgocall's. asmcgocall's own frame record is at
// sched.sp - 8 all along: from there the walk keeps cgocall. From sched.bp it skipped cgocall
// and read on from the wrong record (arm64-go1.23.5-cgocallback ended in bad_fp).
TEST_F(UnwindCoreArm64Test, AsmcgocallDuringACallbackFindsItsFrameFromSchedSp) {
  uint64_t c_fp = kG0StackHi - 0x600;
  Frame(c_fp, kG0StackHi - 0x100 /* g0.sched.bp: stale */, kAsmcgocall + 0x30);
  uint64_t ac_sp = kGStackHi - 0x300, cgocall_sp = ac_sp + 0x20, f_sp = cgocall_sp + 0x40;  // frames: the pcsp's
  GoFrame(ac_sp, cgocall_sp - 8, kAllocFn + 0x60);     // asmcgocall's record: into "cgocall"
  GoFrame(cgocall_sp, f_sp - 8, kMainF + 0x90);        // cgocall's record: into F
  GoFrame(f_sp, 0, kGoexit + 4);
  SetSched(kG, ac_sp, kSystemstackSwitch + 8, cgocall_sp - 8);  // bp: cgocall's, after a callback
  std::vector<uint64_t> want = {0x7f0000005000, kAsmcgocall + 0x30, kAllocFn + 0x60, kMainF + 0x90, kGoexit + 4};
  for (uint32_t flags : {SB_PI_GO | SB_PI_HAS_OFFSETS | SB_PI_SWITCH_SCHED_BP, SB_PI_GO | SB_PI_HAS_OFFSETS}) {
    info_.flags = flags;  // before Go 1.25 and after: asmcgocall takes the same recipe
    counters_ = {};
    auto r = Run(0x7f0000005000, c_fp - 0x20, c_fp, 0x7f0000005100, kG0);
    EXPECT_EQ(Frames(r), want) << flags;
    EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
    EXPECT_EQ(counters_.crossing[SB_CROSS_ASMCGOCALL][SB_CNT_CROSSED], 1u);
  }
}

// amd64 Go 1.21+ crosscall2 pushes two frame records of its own before calling cgocallback:
// cgocallback's saved BP is crosscall2's second record, whose return slot holds a stack
// address. The C stub's BP is the link of the record that returns where crosscall2's pcsp says.
TEST_F(UnwindCoreTest, CgocallbackFindsTheCStubUnderCrosscall2Records) {
  SetCurrentG(kG);
  uint64_t cb_fp = kGStackHi - 0x400, cb_sp = cb_fp - 0x20;
  uint64_t g0_sp = kG0StackHi - 0x800 - 0x18;
  uint64_t c2_sp = g0_sp + 0x28;
  uint64_t r1 = c2_sp + 0x50 - 8;                   // crosscall2's PUSHQ BP record
  uint64_t r2 = r1 - 8;                             // its second record (MOVQ BP, 0x28(SP))
  uint64_t c_fp = kG0StackHi - 0x600;               // the C stub's frame record
  Frame(cb_fp, r2, kCgocallback + 0x20);
  mem_.Put64(kG0 + 56, g0_sp);
  mem_.Put64(g0_sp + 0x20, kCrosscall2 + 0x10);
  mem_.Put64(g0_sp + 0x18, r2);                     // cgocallback saved crosscall2's BP
  mem_.Put64(r2, r1);                               // r2: link r1, "return" slot = [r1]
  mem_.Put64(r1, c_fp);
  mem_.Put64(r1 + 8, 0x7f0000005100);               // crosscall2's return address (pcsp slot)
  Frame(c_fp, 0, 0x7f0000005200);
  auto r = Run(kMainF + 0x30, cb_sp, cb_fp);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kMainF + 0x30, kCgocallback + 0x20, kCrosscall2 + 0x10,
                                              0x7f0000005100, 0x7f0000005200}));
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_END_OF_CHAIN);
}

TEST(StopReasonNames, EveryReasonHasAName) {
  for (int i = 1; i < SB_STOP_MAX; i++) EXPECT_STRNE(StopReasonName(i), "unknown") << i;
  for (int i = 0; i < SB_CROSS_MAX; i++) EXPECT_STRNE(CrossingName(i), "unknown") << i;
}

// arm64 g's TLS copy (TPIDR_EL0 + 16) is written by save_g only while runtime.iscgo is 1: the
// unwinder reads the byte iscgo in the process and uses the slot only then, else R28.
class UnwindCoreArm64TlsTest : public UnwindCoreArm64Test {
 protected:
  static constexpr uint64_t kTpidr = 0x7f0000200000;
  static constexpr uint64_t kIscgo = 0x4c0021;
  void SetUp() override {
    UnwindCoreArm64Test::SetUp();
    info_.flags |= SB_PI_HAS_TLS | SB_PI_HAS_ISCGO;
    info_.tls_g_offset = 16;
    info_.iscgo_addr = kIscgo;
    arm64_tpidr_ = kTpidr;
    mem_.Put64(kTpidr + 16, kG);  // what save_g would have written (or a stale value)
    caller_sp_ = kGStackHi - 0x200;
    GoFrame(caller_sp_, 0, kGoexit + 4);
  }
  void SetIscgo(uint8_t v) { mem_.Put32(kIscgo, v); }
  HostUnwindResult RunLeaf(uint64_t g_reg, bool record_reads = false) {
    HostUnwindInput in = Prepare();
    in.memory = &mem_;
    in.record_reads = record_reads;
    Registers r;
    r.pc = kLeaf + 8;
    r.sp = caller_sp_;
    r.fp = caller_sp_ - 8;
    r.lr = kMainF + 0x60;
    r.g_reg = g_reg;
    r.tls_base = kTpidr;
    return UnwindOnHost(in, r, &counters_);
  }
  static bool Read(const HostUnwindResult& r, uint64_t addr) {
    for (uint64_t a : r.reads) if (a == addr) return true;
    return false;
  }
  uint64_t caller_sp_ = 0;
};

// iscgo 0 (a pure Go program): the slot is never written; only R28 is used. With R28 not a g
// (here 0) the sample has no goroutine, though the slot happens to hold one.
TEST_F(UnwindCoreArm64TlsTest, IscgoZeroUsesR28Only) {
  SetIscgo(0);
  auto r = RunLeaf(/*g_reg=*/0, /*record_reads=*/true);
  EXPECT_TRUE(Read(r, kIscgo));
  EXPECT_FALSE(Read(r, kTpidr + 16)) << "the TLS slot must not be read while iscgo is 0";
  EXPECT_FALSE(r.sample.flags & SB_SAMPLE_HAS_GOID);
  EXPECT_EQ(Frames(r), (std::vector<uint64_t>{kLeaf + 8, kMainF + 0x60, kGoexit + 4}));

  auto with_r28 = RunLeaf(/*g_reg=*/kG);
  EXPECT_TRUE(with_r28.sample.flags & SB_SAMPLE_HAS_GOID);
  EXPECT_EQ(with_r28.sample.goid, 42u);
}

// iscgo 1 (cgo): the slot is current even where R28 is not g (C code, a signal in libc).
TEST_F(UnwindCoreArm64TlsTest, IscgoOneUsesTheTlsSlot) {
  SetIscgo(1);
  auto r = RunLeaf(/*g_reg=*/0x1234, /*record_reads=*/true);
  EXPECT_TRUE(Read(r, kIscgo));
  EXPECT_TRUE(Read(r, kTpidr + 16));
  ASSERT_TRUE(r.sample.flags & SB_SAMPLE_HAS_GOID);
  EXPECT_EQ(r.sample.goid, 42u);
  EXPECT_EQ(r.sample.stop_reason, SB_STOP_ROOT);
}

// iscgo unreadable, or its address unknown: the slot is not trusted, R28 still is.
TEST_F(UnwindCoreArm64TlsTest, IscgoUnknownFallsBackToR28) {
  auto unreadable = RunLeaf(/*g_reg=*/kG, /*record_reads=*/true);  // iscgo byte not in memory
  EXPECT_FALSE(Read(unreadable, kTpidr + 16));
  EXPECT_EQ(unreadable.sample.goid, 42u);
  SetIscgo(1);
  info_.flags &= ~static_cast<uint32_t>(SB_PI_HAS_ISCGO);
  auto no_addr = RunLeaf(/*g_reg=*/0, /*record_reads=*/true);
  EXPECT_FALSE(Read(no_addr, kTpidr + 16));
  EXPECT_FALSE(no_addr.sample.flags & SB_SAMPLE_HAS_GOID);
}

}  // namespace
}  // namespace sb::unwind
