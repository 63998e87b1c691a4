// The exit probe's ring record (ebpf/exitprobe.h sb_xp_stack_record, then the packed sample of
// ebpf/sample_record.h) unpacked into sb_xp_stack: each part lands where the call-path consumers
// read it, and a record that is short, over a limit, holds kernel frames or is not exactly its
// counts' size is refused with the output reset, never read past.
#include "exitprobe/stack_record.h"

#include "tests/common/sample_record_bytes.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace sb::exitprobe {
namespace {

sb_xp_stack_record XpHeader() {
  sb_xp_stack_record h{};
  h.func = 3;
  h.ns = 8'000'123;
  h.bias = 0x55550000;
  return h;
}

sb_sample_record SampleHeader(uint32_t nframes, uint8_t nlabels) {
  sb_sample_record h = sb::testrec::MakeSampleHeader(nframes, nlabels);  // kernel stack: off
  std::memcpy(h.comm, "traced", 7);
  return h;
}

constexpr auto Label = sb::testrec::MakeLabel;

// A record laid out as the exit probe sends it: its header, the sample header, frames, exact
// words, kernel frames (the probe sends none; a test may), labels.
std::vector<unsigned char> Record(const sb_xp_stack_record& xh, const sb_sample_record& sh,
                                  const std::vector<uint64_t>& frames, const std::vector<uint64_t>& exact,
                                  const std::vector<sb_label>& labels, const std::vector<uint64_t>& kernel = {}) {
  std::vector<unsigned char> b;
  sb::testrec::AppendBytes(&b, &xh, sizeof(xh));
  sb::testrec::AppendSampleRecord(&b, sh, frames, exact, kernel, labels);
  return b;
}

std::vector<uint64_t> Frames(uint32_t n) {
  std::vector<uint64_t> f;
  for (uint64_t i = 0; i < n; i++) f.push_back(0x401000 + i * 16);
  return f;
}

void ExpectReset(const sb_xp_stack& out) {
  EXPECT_EQ(out.func, 0u);
  EXPECT_EQ(out.ns, 0u);
  EXPECT_EQ(out.bias, 0u);
  EXPECT_EQ(out.s.pid, 0u);
  EXPECT_EQ(out.s.nframes, 0u);
  EXPECT_EQ(out.s.labels.count, 0);
  EXPECT_EQ(out.s.frames[0], 0u);
}

TEST(XpStackRecord, WholeRecordRoundTrips) {
  std::vector<uint64_t> frames = Frames(70);
  std::vector<uint64_t> exact = {0x5, 0x2};  // frames 0, 2 and 65 exact
  std::vector<sb_label> labels = {Label("path", "slow"), Label("tenant", "a")};
  auto rec = Record(XpHeader(), SampleHeader(70, 2), frames, exact, labels);
  ASSERT_EQ(rec.size(), XpStackRecordSize(70, 2));

  auto out = std::make_unique<sb_xp_stack>();
  std::memset(out.get(), 0xab, sizeof(*out));  // every field must be set, not left over
  ASSERT_EQ(UnpackXpStackRecord(rec.data(), rec.size(), out.get()), "");
  EXPECT_EQ(out->func, 3u);
  EXPECT_EQ(out->pad, 0u);
  EXPECT_EQ(out->ns, 8'000'123u);
  EXPECT_EQ(out->bias, 0x55550000u);
  EXPECT_EQ(out->s.pid, 41u);
  EXPECT_EQ(out->s.tid, 42u);
  EXPECT_EQ(out->s.time_ns, 123456789u);
  EXPECT_EQ(out->s.goid, 17u);
  EXPECT_EQ(out->s.goid_g, 0xc000001000u);
  EXPECT_EQ(out->s.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(out->s.flags, SB_SAMPLE_HAS_GOID);
  EXPECT_STREQ(out->s.comm, "traced");
  ASSERT_EQ(out->s.nframes, 70u);
  for (size_t i = 0; i < frames.size(); i++) EXPECT_EQ(out->s.frames[i], frames[i]) << i;
  EXPECT_EQ(out->s.frames[70], 0u);
  EXPECT_EQ(out->s.exact[0], 0x5u);
  EXPECT_EQ(out->s.exact[1], 0x2u);
  EXPECT_EQ(out->s.exact[2], 0u);
  EXPECT_EQ(out->s.labels.status, SB_LABELS_OK);
  ASSERT_EQ(out->s.labels.count, 2);
  EXPECT_EQ(out->s.labels.total, 2u);
  EXPECT_EQ(std::string(out->s.labels.l[0].key, out->s.labels.l[0].key_len), "path");
  EXPECT_EQ(std::string(out->s.labels.l[0].val, out->s.labels.l[0].val_len), "slow");
  EXPECT_EQ(std::string(out->s.labels.l[1].key, out->s.labels.l[1].key_len), "tenant");
  EXPECT_EQ(std::string(out->s.labels.l[1].val, out->s.labels.l[1].val_len), "a");
  EXPECT_EQ(out->s.labels.l[2].key_len, 0);
}

// What most call paths are: ~20 frames, no labels. The record is the two headers, the frames and
// one exact word, against the 1,784-byte header plus frames the probe sent before.
TEST(XpStackRecord, ATypicalPathIsSmall) {
  auto rec = Record(XpHeader(), SampleHeader(20, 0), Frames(20), {0x1}, {});
  EXPECT_EQ(rec.size(), 264u);
  EXPECT_EQ(offsetof(sb_xp_stack, s) + offsetof(sb_sample, frames), 1784u);  // the old record's fixed part
  auto out = std::make_unique<sb_xp_stack>();
  ASSERT_EQ(UnpackXpStackRecord(rec.data(), rec.size(), out.get()), "");
  EXPECT_EQ(out->s.nframes, 20u);
  EXPECT_EQ(out->s.frames[19], 0x401000u + 19 * 16);
  EXPECT_EQ(out->s.labels.count, 0);
  EXPECT_EQ(out->s.labels.status, SB_LABELS_NONE);
}

TEST(XpStackRecord, ShortHeadersAreRefused) {
  auto rec = Record(XpHeader(), SampleHeader(0, 0), {}, {}, {});
  auto out = std::make_unique<sb_xp_stack>();
  ASSERT_EQ(UnpackXpStackRecord(rec.data(), rec.size(), out.get()), "");
  EXPECT_EQ(out->func, 3u);
  for (size_t cut : {rec.size() - 1, sizeof(sb_xp_stack_record) + 8, sizeof(sb_xp_stack_record),
                     sizeof(sb_xp_stack_record) - 1, size_t{0}}) {
    SCOPED_TRACE(cut);
    std::memset(out.get(), 0xab, sizeof(*out));
    std::string why = UnpackXpStackRecord(rec.data(), cut, out.get());
    EXPECT_NE(why.find("shorter than its header"), std::string::npos) << why;
    ExpectReset(*out);
  }
  EXPECT_NE(UnpackXpStackRecord(nullptr, 100, out.get()), "");
  ExpectReset(*out);
}

TEST(XpStackRecord, CountsOverTheirLimitsAreRefused) {
  std::vector<unsigned char> big(SB_XP_STACK_RECORD_MAX * 2, 0);
  auto out = std::make_unique<sb_xp_stack>();
  for (int which = 0; which < 2; which++) {
    sb_sample_record h = SampleHeader(1, 0);
    if (which == 0) h.nframes = SB_MAX_FRAMES + 1;
    if (which == 1) h.labels_count = SB_MAX_LABELS + 1;
    sb_xp_stack_record xh = XpHeader();
    std::memcpy(big.data(), &xh, sizeof(xh));
    std::memcpy(big.data() + sizeof(xh), &h, sizeof(h));
    SCOPED_TRACE(which);
    std::memset(out.get(), 0xab, sizeof(*out));
    EXPECT_NE(UnpackXpStackRecord(big.data(), big.size(), out.get()), "");
    ExpectReset(*out);
  }
}

// The exit probe sends no kernel stack: a record with kernel frames is not its own, even one
// whose size matches them.
TEST(XpStackRecord, KernelFramesAreRefused) {
  sb_sample_record h = SampleHeader(2, 0);
  h.kernel_status = SB_KSTACK_OK;
  h.kernel_nframes = 1;
  auto rec = Record(XpHeader(), h, Frames(2), {0x1}, {}, {0xffffffff81000010});
  auto out = std::make_unique<sb_xp_stack>();
  std::string why = UnpackXpStackRecord(rec.data(), rec.size(), out.get());
  EXPECT_NE(why.find("kernel frames"), std::string::npos) << why;
  ExpectReset(*out);
}

// Exactly its counts' size: shorter is cut, longer is another layout; neither is read.
TEST(XpStackRecord, SizeMismatchIsRefused) {
  auto rec = Record(XpHeader(), SampleHeader(5, 1), Frames(5), {0x1}, {Label("path", "slow")});
  auto out = std::make_unique<sb_xp_stack>();
  ASSERT_EQ(UnpackXpStackRecord(rec.data(), rec.size(), out.get()), "");
  EXPECT_EQ(out->s.labels.count, 1);
  for (size_t size : {rec.size() - 1, rec.size() - sizeof(sb_label), rec.size() + 1, rec.size() + 8}) {
    SCOPED_TRACE(size);
    std::vector<unsigned char> b = rec;
    b.resize(size, 0);
    std::string why = UnpackXpStackRecord(b.data(), b.size(), out.get());
    EXPECT_NE(why, "");
    EXPECT_NE(why.find(std::to_string(size) + " bytes"), std::string::npos) << why;
    ExpectReset(*out);
  }
}

// The largest record fits the BPF side's buffer (header + SB_SAMPLE_RECORD_MAX), which also has
// room for the kernel frames the probe never sends.
TEST(XpStackRecord, TheLargestRecordFitsTheBuffer) {
  EXPECT_EQ(XpStackRecordSize(SB_MAX_FRAMES, SB_MAX_LABELS) + SB_MAX_KERNEL_FRAMES * 8, SB_XP_STACK_RECORD_MAX);
  EXPECT_EQ(sizeof(sb_xp_stack_record) % 8, 0u);  // the sample record's parts stay 8-byte aligned
}

}  // namespace
}  // namespace sb::exitprobe
