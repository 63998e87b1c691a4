// The sampler's ring record (ebpf/sample_record.h sb_sample_record) unpacked into sb_cpu_sample: each
// part lands where the recorder reads it, and a record shorter than its counts or with a count
// over its limit is refused, never read past.
#include "unwinder/sample_record.h"

#include "tests/common/sample_record_bytes.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace sb::unwinder {
namespace {

// A record laid out as sample_record.h says: header, frames, exact words, kernel frames, labels.
std::vector<unsigned char> Record(const sb_sample_record& h, const std::vector<uint64_t>& frames,
                                  const std::vector<uint64_t>& exact, const std::vector<uint64_t>& kernel,
                                  const std::vector<sb_label>& labels) {
  std::vector<unsigned char> b;
  sb::testrec::AppendSampleRecord(&b, h, frames, exact, kernel, labels);
  return b;
}

constexpr auto Label = sb::testrec::MakeLabel;

sb_sample_record Header(uint32_t nframes, uint16_t knframes, uint8_t nlabels) {
  sb_sample_record h = sb::testrec::MakeSampleHeader(nframes, nlabels);
  h.crossed = 1u << SB_CROSS_MORESTACK;
  h.kernel_status = knframes ? SB_KSTACK_OK : SB_KSTACK_USER;
  h.kernel_nframes = knframes;
  std::memcpy(h.comm, "demo", 5);
  return h;
}

TEST(SampleRecord, EveryPartLandsInItsField) {
  std::vector<uint64_t> frames;
  for (uint64_t i = 0; i < 70; i++) frames.push_back(0x401000 + i * 16);
  std::vector<uint64_t> exact = {0x5, 0x2};  // frames 0, 2 and 65 exact
  std::vector<uint64_t> kernel = {0xffffffff81000010, 0xffffffff81000020, 0xffffffff81000030};
  std::vector<sb_label> labels = {Label("handler", "/api"), Label("tenant", "a")};
  auto rec = Record(Header(70, 3, 2), frames, exact, kernel, labels);
  ASSERT_EQ(rec.size(), SampleRecordSize(70, 3, 2));

  sb_cpu_sample out;
  std::memset(&out, 0xab, sizeof(out));  // every field must be set, not left over
  ASSERT_EQ(UnpackSampleRecord(rec.data(), rec.size(), &out), "");
  EXPECT_EQ(out.s.pid, 41u);
  EXPECT_EQ(out.s.tid, 42u);
  EXPECT_EQ(out.s.time_ns, 123456789u);
  EXPECT_EQ(out.s.goid, 17u);
  EXPECT_EQ(out.s.goid_g, 0xc000001000u);
  EXPECT_EQ(out.s.stop_reason, SB_STOP_ROOT);
  EXPECT_EQ(out.s.flags, SB_SAMPLE_HAS_GOID);
  EXPECT_EQ(out.s.crossed, 1u << SB_CROSS_MORESTACK);
  EXPECT_STREQ(out.s.comm, "demo");
  ASSERT_EQ(out.s.nframes, 70u);
  for (size_t i = 0; i < frames.size(); i++) EXPECT_EQ(out.s.frames[i], frames[i]) << i;
  EXPECT_EQ(out.s.frames[70], 0u);
  EXPECT_EQ(out.s.exact[0], 0x5u);
  EXPECT_EQ(out.s.exact[1], 0x2u);
  EXPECT_EQ(out.s.exact[2], 0u);
  EXPECT_EQ(out.kernel.status, SB_KSTACK_OK);
  ASSERT_EQ(out.kernel.nframes, 3);
  for (size_t i = 0; i < kernel.size(); i++) EXPECT_EQ(out.kernel.frames[i], kernel[i]);
  EXPECT_EQ(out.s.labels.status, SB_LABELS_OK);
  ASSERT_EQ(out.s.labels.count, 2);
  EXPECT_EQ(out.s.labels.total, 2u);
  EXPECT_EQ(std::string(out.s.labels.l[0].key, out.s.labels.l[0].key_len), "handler");
  EXPECT_EQ(std::string(out.s.labels.l[0].val, out.s.labels.l[0].val_len), "/api");
  EXPECT_EQ(std::string(out.s.labels.l[1].key, out.s.labels.l[1].key_len), "tenant");
  EXPECT_EQ(std::string(out.s.labels.l[1].val, out.s.labels.l[1].val_len), "a");
}

// What most samples are: a user stack, no kernel frames, no labels. The record is the header,
// the frames and one exact word: a tenth of the fixed sb_cpu_sample cut after its frames.
TEST(SampleRecord, APlainSampleIsSmall) {
  std::vector<uint64_t> frames = {0x401000, 0x402000, 0x403000};
  auto rec = Record(Header(3, 0, 0), frames, {0x1}, {}, {});
  EXPECT_EQ(rec.size(), sizeof(sb_sample_record) + 4 * 8);
  EXPECT_LT(rec.size(), 256u);
  sb_cpu_sample out;
  ASSERT_EQ(UnpackSampleRecord(rec.data(), rec.size(), &out), "");
  EXPECT_EQ(out.s.nframes, 3u);
  EXPECT_EQ(out.s.frames[2], 0x403000u);
  EXPECT_EQ(out.s.exact[0], 0x1u);
  EXPECT_EQ(out.kernel.status, SB_KSTACK_USER);
  EXPECT_EQ(out.kernel.nframes, 0);
  EXPECT_EQ(out.s.labels.count, 0);
  EXPECT_EQ(out.s.labels.status, SB_LABELS_NONE);
}

TEST(SampleRecord, NoFramesHasNoExactWord) {
  auto rec = Record(Header(0, 0, 0), {}, {}, {}, {});
  EXPECT_EQ(rec.size(), sizeof(sb_sample_record));
  sb_cpu_sample out;
  EXPECT_EQ(UnpackSampleRecord(rec.data(), rec.size(), &out), "");
  EXPECT_EQ(out.s.nframes, 0u);
}

TEST(SampleRecord, ShortRecordsAreRefused) {
  std::vector<uint64_t> frames = {0x401000, 0x402000};
  auto rec = Record(Header(2, 1, 1), frames, {0x1}, {0xffffffff81000010}, {Label("k", "v")});
  sb_cpu_sample out;
  ASSERT_EQ(UnpackSampleRecord(rec.data(), rec.size(), &out), "");
  for (size_t cut : {rec.size() - 1, rec.size() - sizeof(sb_label), sizeof(sb_sample_record) + 8,
                     sizeof(sb_sample_record), sizeof(sb_sample_record) - 1, size_t{0}}) {
    SCOPED_TRACE(cut);
    std::string why = UnpackSampleRecord(rec.data(), cut, &out);
    EXPECT_NE(why, "");
    EXPECT_EQ(out.s.nframes, 0u);  // reset, not half filled
    EXPECT_EQ(out.s.pid, 0u);
  }
  EXPECT_NE(UnpackSampleRecord(nullptr, 100, &out), "");
}

TEST(SampleRecord, CountsOverTheirLimitsAreRefused) {
  sb_cpu_sample out;
  std::vector<unsigned char> big(SB_SAMPLE_RECORD_MAX * 2, 0);
  for (int which = 0; which < 3; which++) {
    sb_sample_record h = Header(1, 0, 0);
    if (which == 0) h.nframes = SB_MAX_FRAMES + 1;
    if (which == 1) h.kernel_nframes = SB_MAX_KERNEL_FRAMES + 1;
    if (which == 2) h.labels_count = SB_MAX_LABELS + 1;
    std::memcpy(big.data(), &h, sizeof(h));
    SCOPED_TRACE(which);
    EXPECT_NE(UnpackSampleRecord(big.data(), big.size(), &out), "");
  }
}

// A label length over its buffer (which the BPF side never sends) is cut to the buffer.
TEST(SampleRecord, LabelLengthsStayInTheirBuffers) {
  sb_label l = Label("k", "v");
  l.key_len = 255;
  l.val_len = 255;
  auto rec = Record(Header(1, 0, 1), {0x401000}, {0x1}, {}, {l});
  sb_cpu_sample out;
  ASSERT_EQ(UnpackSampleRecord(rec.data(), rec.size(), &out), "");
  EXPECT_EQ(out.s.labels.l[0].key_len, SB_LABEL_KEY_LEN);
  EXPECT_EQ(out.s.labels.l[0].val_len, SB_LABEL_VAL_LEN);
}

// Into a sample alone (the exit probe's form): the parts land as into sb_cpu_sample, and a record
// with kernel frames, which would have nowhere to go, is refused.
TEST(SampleRecord, IntoASampleWithoutAKernelStack) {
  auto plain = Record(Header(2, 0, 1), {0x401000, 0x402000}, {0x1}, {}, {Label("k", "v")});
  auto s = std::make_unique<sb_sample>();
  ASSERT_EQ(UnpackSampleRecord(plain.data(), plain.size(), s.get(), nullptr), "");
  EXPECT_EQ(s->pid, 41u);
  ASSERT_EQ(s->nframes, 2u);
  EXPECT_EQ(s->frames[1], 0x402000u);
  EXPECT_EQ(s->exact[0], 0x1u);
  ASSERT_EQ(s->labels.count, 1);
  EXPECT_EQ(std::string(s->labels.l[0].val, s->labels.l[0].val_len), "v");

  auto with_kernel = Record(Header(2, 1, 0), {0x401000, 0x402000}, {0x1}, {0xffffffff81000010}, {});
  std::string why = UnpackSampleRecord(with_kernel.data(), with_kernel.size(), s.get(), nullptr);
  EXPECT_NE(why.find("1 kernel frames"), std::string::npos) << why;
  EXPECT_EQ(s->nframes, 0u);  // reset
  EXPECT_EQ(s->pid, 0u);
}

// The largest record fits the BPF side's buffer, which is sized by SB_SAMPLE_RECORD_MAX.
TEST(SampleRecord, TheLargestRecordFitsTheBuffer) {
  EXPECT_EQ(SampleRecordSize(SB_MAX_FRAMES, SB_MAX_KERNEL_FRAMES, SB_MAX_LABELS), SB_SAMPLE_RECORD_MAX);
}

}  // namespace
}  // namespace sb::unwinder
