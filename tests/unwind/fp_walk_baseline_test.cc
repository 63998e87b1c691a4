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

}  // namespace
}  // namespace sb::unwind
