// The sampler (a process made at exec from its executable's template) and trace --stacks of a
// PIE executable relocate the bias-0 facts in BPF with sb_proc_info_add_bias
// (ebpf/unwind/proc_info_bias.h). It must give exactly what MakeProcInfo gives for
// that bias: a new address field of sb_proc_info that MakeProcInfo moves by the bias and the
// relocation does not makes these tests fail.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "ebpf/unwind/proc_info_bias.h"
#include "symbolizer/binary.h"
#include "unwinder/go_binary_facts.h"

namespace sb::exitprobe {
namespace {

const std::string kWorkloads = SB_WORKLOAD_DIR;
constexpr uint64_t kBias = 0x55e4c0a00000;

// Byte-for-byte: the relocated template equals the facts made for the bias.
void ExpectRelocatedEqualsMade(const unwinder::GoBinaryFacts& f) {
  sb_proc_info relocated = unwinder::MakeProcInfo(f, 0, 0);
  sb_proc_info_add_bias(&relocated, kBias);
  sb_proc_info made = unwinder::MakeProcInfo(f, kBias, 0);
  EXPECT_EQ(relocated.text_start, made.text_start);
  EXPECT_EQ(relocated.nranges, made.nranges);
  EXPECT_EQ(std::memcmp(&relocated, &made, sizeof(made)), 0) << "an address field is not relocated";
  // And the bias did move something (the comparison is not vacuous).
  sb_proc_info at0 = unwinder::MakeProcInfo(f, 0, 0);
  EXPECT_NE(std::memcmp(&at0, &made, sizeof(made)), 0);
}

TEST(ProcInfoBias, EveryAddressFieldOfSyntheticFacts) {
  // Every address fact set (arm64's iscgo too, all 32 ranges, every save point), so each one
  // that MakeProcInfo moves must be moved by the relocation as well.
  unwinder::GoBinaryFacts f;
  f.arch = sym::Arch::kArm64;
  f.go_minor = 23;
  f.pie = true;
  f.text_start = 0x11000;
  f.text_end = 0x99000;
  f.has_offsets = true;
  f.has_tls = true;
  f.tls_g_offset = 0x10;
  f.has_iscgo = true;
  f.iscgo_addr = 0x1a2b30;
  f.labels_layout = SB_PI_LABELS_HMAP;
  for (int i = 0; i < SB_MAX_RANGES + 2; i++)
    f.ranges.push_back({"f" + std::to_string(i), 0x12000u + 0x100u * i, 0x12080u + 0x100u * i, SB_FN_ROOT, 0, ""});
  for (int i = 0; i < 10; i++) f.mcall_return_sites.push_back(0x20000 + 0x40 * i);
  f.morestack = 0x30000;
  f.morestack_noctxt = 0x30100;
  f.systemstack_switch_start = 0x30200;
  f.systemstack_switch_end = 0x30240;
  f.gogo.found = true;  // amd64 only in practice; MakeProcInfo copies it for any arch
  f.gogo.g0_lo = 0x30300;
  f.gogo.g0_hi = 0x30310;
  f.gogo.gp_lo = 0x30310;
  f.gogo.gp_hi = 0x30320;
  f.gogo.bp_loaded = 0x30318;
  f.gogo.lr_loaded = 0x3031c;  // arm64's
  f.gogo.save_g_lo = 0x30500;
  f.gogo.save_g_hi = 0x30540;
  f.systemstack.found = true;
  f.systemstack.g0_lo = 0x30600;
  f.systemstack.g0_hi = 0x30610;
  f.systemstack.gp_lo = 0x30620;
  f.systemstack.gp_hi = 0x30630;
  f.asmcgocall.found = true;
  f.asmcgocall.g0_lo = 0x30640;
  f.asmcgocall.g0_hi = 0x30644;
  f.asmcgocall.gp_lo = 0x30660;
  f.asmcgocall.gp_hi = 0x30663;
  f.clone.found = true;
  f.clone.shared_lo = 0x30340;
  f.clone.shared_hi = 0x3034b;
  f.newstack_morebuf_lo = 0x30400;
  f.newstack_morebuf_hi = 0x30480;
  f.morebuf_cfa_off = -184;
  f.gobuf_g = 16;
  f.sp_deltas.resize(5);
  ExpectRelocatedEqualsMade(f);
}

TEST(ProcInfoBias, RealPieBinaries) {
  for (const char* name : {"traced-pie", "demo-pie"}) {
    SCOPED_TRACE(name);
    std::string path = kWorkloads + "/" + name;
    auto bin = sym::Binary::Load(path);
    ASSERT_TRUE(bin.ok()) << bin.error();
    auto f = unwinder::AnalyzeGoBinary(**bin, path);
    ASSERT_TRUE(f.ok()) << f.error();
    EXPECT_TRUE((*f)->pie);
    EXPECT_GT((*f)->ranges.size(), 3u);
    EXPECT_NE((*f)->morestack, 0u);
    ExpectRelocatedEqualsMade(**f);
  }
}

}  // namespace
}  // namespace sb::exitprobe
