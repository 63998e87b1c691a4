// The floor walk `record --compare-fp-walk` times beside the unwinder (fp_walk_baseline.h, the
// code the BPF sampler runs): the plain frame-pointer walk's frames, plus the reads that name
// the goroutine (TLS g, g.m and goid in one read of g's header, m.curg, curg's goid on g0).
// If it stopped reading what it claims, its time would no longer be the floor it is reported as.
#include <gtest/gtest.h>

#include <vector>

#include "ebpf/unwind/host_unwind.h"
#include "tests/unwind/byte_memory.h"

namespace sb::unwind {
namespace {


constexpr uint64_t kFsBase = 0x7f0000001000;
constexpr uint64_t kG = 0xc000000000, kG0 = 0xc000001000, kM = 0xc000002000;
constexpr uint64_t kStack = 0xc000100000;

class FloorWalkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    info_.flags = SB_PI_GO | SB_PI_HAS_OFFSETS | SB_PI_HAS_TLS;
    info_.arch = SB_ARCH_AMD64;
    info_.tls_g_offset = -8;
    info_.max_frames = 128;
    // Go 1.19's g and m: m at 48, sched at 56, atomicstatus at 144, goid at 152; m.curg at 192.
    info_.off.g_m = 48;
    info_.off.g_sched = 56;
    info_.off.gobuf_sp = 0;
    info_.off.gobuf_pc = 8;
    info_.off.gobuf_bp = 48;
    info_.off.g_atomicstatus = 144;
    info_.off.g_goid = 152;
    info_.off.m_curg = 192;
    for (uint64_t g : {kG, kG0}) mem_.FillAbsent(g + 48, 152 + 8 - 48);  // g's header, read whole
    mem_.Put64(kG + 48, kM);
    mem_.Put64(kG + 152, 42);
    mem_.Put64(kG0 + 48, kM);
    mem_.Put64(kG0 + 152, 0);
    mem_.Put64(kM + 192, kG);
    // Three frame records: fp -> fp+0x40 -> fp+0x80 -> 0.
    for (int i = 0; i < 3; i++) {
      uint64_t fp = kStack + 0x40 * i;
      mem_.Put64(fp, i < 2 ? fp + 0x40 : 0);
      mem_.Put64(fp + 8, 0x401000 + i);
    }
    in_.info = &info_;
    in_.memory = &mem_;
    in_.record_reads = true;
  }
  FloorWalkResult Run(uint64_t g_in_tls) {
    mem_.Put64(kFsBase - 8, g_in_tls);
    Registers regs;
    regs.pc = 0x401800;
    regs.fp = kStack;
    regs.tls_base = kFsBase;
    return FloorWalkOnHost(in_, regs);
  }

  sb_proc_info info_{};
  ByteMemory mem_;
  HostUnwindInput in_;
};

TEST_F(FloorWalkTest, UserGoroutineReadsTlsHeaderAndCurgThenWalks) {
  FloorWalkResult r = Run(kG);
  EXPECT_EQ(r.frames, 3u);
  EXPECT_EQ(r.goid, 42u);
  // TLS slot, g's header from g.m (one read), m.curg, then the three frame records.
  EXPECT_EQ(r.reads, (std::vector<uint64_t>{kFsBase - 8, kG + 48, kM + 192, kStack, kStack + 0x40, kStack + 0x80}));
}

TEST_F(FloorWalkTest, OnG0TheGoroutineIsCurg) {
  FloorWalkResult r = Run(kG0);
  EXPECT_EQ(r.goid, 42u);  // curg's, not g0's 0
  EXPECT_EQ(r.frames, 3u);
  EXPECT_EQ(r.reads, (std::vector<uint64_t>{kFsBase - 8, kG0 + 48, kM + 192, kG + 152, kStack, kStack + 0x40,
                                            kStack + 0x80}));
}

TEST_F(FloorWalkTest, NoGoroutineStillWalks) {
  FloorWalkResult r = Run(0);  // a thread Go has not set up (or C): the walk alone
  EXPECT_EQ(r.goid, 0u);
  EXPECT_EQ(r.frames, 3u);
  mem_.Put64(kM + 192, 0);     // an m with no curg (idle, in the scheduler)
  r = Run(kG0);
  EXPECT_EQ(r.goid, 0u);
  EXPECT_EQ(r.frames, 3u);
}

TEST_F(FloorWalkTest, Arm64TakesGFromR28) {
  info_.arch = SB_ARCH_ARM64;
  Registers regs;
  regs.fp = kStack;
  regs.g_reg = kG;
  FloorWalkResult r = FloorWalkOnHost(in_, regs);
  EXPECT_EQ(r.goid, 42u);
  EXPECT_EQ(r.reads.front(), kG + 48);
  EXPECT_EQ(r.frames, 3u);
}

// The crossing floor (--compare-crossing-floor): on g0, g0's stack bounds end the g0 walk where
// the chain leaves it; curg's header (goid and gobuf in one read) and its stack from gobuf.bp
// follow, gobuf.pc counted as a frame. Without the crossing the same sample walks the chain on.
class CrossingFloorTest : public FloorWalkTest {
 protected:
  static constexpr uint64_t kG0Stack = 0xc000080000, kCurgBp = 0xc000300000;  // g0 below kStack
  void SetUp() override {
    FloorWalkTest::SetUp();
    in_.stack_window = false;  // one read per record, so the reads below are the records'
    info_.off.g_stack_lo = 0;
    info_.off.g_stack_hi = 8;
    mem_.Put64(kG0, kG0Stack);  // g0.stack = [kG0Stack, kG0Stack + 0x1000)
    mem_.Put64(kG0 + 8, kG0Stack + 0x1000);
    // g0: two records, the second linking into the goroutine's stack (kStack: three more).
    mem_.Put64(kG0Stack + 0x100, kG0Stack + 0x200);
    mem_.Put64(kG0Stack + 0x108, 0x402000);
    mem_.Put64(kG0Stack + 0x200, kStack);
    mem_.Put64(kG0Stack + 0x208, 0x402100);
    // curg's gobuf: pc, and bp at two records of its own.
    mem_.Put64(kG + 56 + 8, 0x403000);
    mem_.Put64(kG + 56 + 48, kCurgBp);
    mem_.Put64(kCurgBp, kCurgBp + 0x40);
    mem_.Put64(kCurgBp + 8, 0x403100);
    mem_.Put64(kCurgBp + 0x40, 0);
    mem_.Put64(kCurgBp + 0x48, 0x403200);
  }
  FloorWalkResult RunOnG0(bool cross) {
    mem_.Put64(kFsBase - 8, kG0);
    Registers regs;
    regs.pc = 0x401800;
    regs.fp = kG0Stack + 0x100;
    regs.tls_base = kFsBase;
    return FloorWalkOnHost(in_, regs, cross);
  }
};

TEST_F(CrossingFloorTest, OnG0WalksG0ThenCurgFromItsGobuf) {
  FloorWalkResult r = RunOnG0(true);
  EXPECT_EQ(r.goid, 42u);
  EXPECT_EQ(r.frames, 2u + 1u + 2u);  // g0's two, gobuf.pc, curg's two
  // TLS slot, g0's header, m.curg, g0.stack, curg's header, g0's records, curg's records.
  EXPECT_EQ(r.reads, (std::vector<uint64_t>{kFsBase - 8, kG0 + 48, kM + 192, kG0, kG + 48, kG0Stack + 0x100,
                                            kG0Stack + 0x200, kCurgBp, kCurgBp + 0x40}));
}

TEST_F(CrossingFloorTest, RecordsAsTheUnwinderReadsThemSameFrames) {
  in_.stack_window = true;  // the sampler's stack window: the records from page reads where they work
  FloorWalkResult r = RunOnG0(true);
  EXPECT_EQ(r.goid, 42u);
  EXPECT_EQ(r.frames, 5u);
}

TEST_F(CrossingFloorTest, WithoutTheCrossingTheChainGoesOn) {
  FloorWalkResult r = RunOnG0(false);
  EXPECT_EQ(r.goid, 42u);
  EXPECT_EQ(r.frames, 2u + 3u);  // g0's two, then the chain into kStack's three
}

TEST_F(CrossingFloorTest, OnCurgNothingIsCrossed) {
  Registers regs;
  regs.fp = kStack;
  regs.tls_base = kFsBase;
  mem_.Put64(kFsBase - 8, kG);
  FloorWalkResult r = FloorWalkOnHost(in_, regs, true);
  EXPECT_EQ(r.frames, 3u);
  EXPECT_EQ(r.reads, (std::vector<uint64_t>{kFsBase - 8, kG + 48, kM + 192, kStack, kStack + 0x40, kStack + 0x80}));
}

TEST_F(CrossingFloorTest, KeepsToMaxFrames) {
  info_.max_frames = 4;  // leaf + 3: g0's two and gobuf.pc, none of curg's
  EXPECT_EQ(RunOnG0(true).frames, 3u);
  info_.max_frames = 3;  // leaf + 2: g0's two only
  EXPECT_EQ(RunOnG0(true).frames, 2u);
}

}  // namespace
}  // namespace sb::unwind
