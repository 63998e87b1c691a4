// goroutine_labels.h over synthetic memory: both layouts runtime/pprof gives g.labels (Go
// 1.19-1.23 map[string]string, 1.24+ sorted slice), the bounds (8 labels, 64-byte keys,
// 128-byte values), missing facts and read faults; and which g a sample is labelled with.
#include <cstring>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "ebpf/unwind/host_unwind.h"
#include "tests/unwind/byte_memory.h"

namespace {

using sb::unwind::HostUnwindInput;
using sb::unwind::ReadLabelsOnHost;

class FakeMemory : public sb::unwind::ByteMemory {
 public:
  // A Go string: its bytes at a fresh address, its header (data, len) at hdr.
  void PutString(uint64_t hdr, const std::string& s) {
    uint64_t data = next_data_;
    next_data_ += (s.size() + 15) & ~15ull;
    PutBytes(data, s);
    Put64(hdr, s.empty() ? 0 : data);
    Put64(hdr + 8, s.size());
  }

 private:
  uint64_t next_data_ = 0x900000;
};

constexpr uint64_t kG = 0x100000;
constexpr uint16_t kLabelsOff = 352;  // Go 1.23/1.24's g.labels
constexpr uint64_t kSet = 0x200000;   // what g.labels points to

sb_proc_info Info(uint32_t layout) {
  sb_proc_info pi{};
  pi.flags = SB_PI_GO | SB_PI_HAS_OFFSETS | layout;
  pi.arch = SB_ARCH_AMD64;
  pi.off.g_labels = kLabelsOff;
  return pi;
}

std::string Key(const sb_label& l) { return std::string(l.key, l.key_len); }
std::string Val(const sb_label& l) { return std::string(l.val, l.val_len); }

// Go 1.24+: g.labels -> labelMap{LabelSet{list []label}}: the slice header, 32-byte entries.
void PutSlice(FakeMemory* m, const std::vector<std::pair<std::string, std::string>>& kv) {
  constexpr uint64_t kArray = 0x300000;
  m->Put64(kG + kLabelsOff, kSet);
  m->Put64(kSet, kArray);
  m->Put64(kSet + 8, kv.size());
  m->Put64(kSet + 16, kv.size());
  for (size_t i = 0; i < kv.size(); i++) {
    m->PutString(kArray + 32 * i, kv[i].first);
    m->PutString(kArray + 32 * i + 16, kv[i].second);
  }
}

TEST(GoroutineLabels, SliceLayoutGo124) {
  FakeMemory m;
  PutSlice(&m, {{"endpoint", "/api/users"}, {"tenant", "a"}});
  sb_proc_info pi = Info(SB_PI_LABELS_SLICE);
  HostUnwindInput in;
  in.info = &pi;
  in.memory = &m;
  sb_labels l = ReadLabelsOnHost(in, kG);
  EXPECT_EQ(l.status, SB_LABELS_OK);
  ASSERT_EQ(l.count, 2);
  EXPECT_EQ(l.total, 2u);
  EXPECT_EQ(Key(l.l[0]), "endpoint");
  EXPECT_EQ(Val(l.l[0]), "/api/users");
  EXPECT_EQ(Key(l.l[1]), "tenant");
  EXPECT_EQ(Val(l.l[1]), "a");
  EXPECT_EQ(l.l[0].flags, 0);
}

TEST(GoroutineLabels, EightKeptMoreTruncated) {
  FakeMemory m;
  std::vector<std::pair<std::string, std::string>> kv;
  for (int i = 0; i < 10; i++) kv.push_back({"k" + std::to_string(i), "v" + std::to_string(i)});
  PutSlice(&m, kv);
  sb_proc_info pi = Info(SB_PI_LABELS_SLICE);
  HostUnwindInput in;
  in.info = &pi;
  in.memory = &m;
  sb_labels l = ReadLabelsOnHost(in, kG);
  EXPECT_EQ(l.status, SB_LABELS_TRUNCATED);
  EXPECT_EQ(l.count, SB_MAX_LABELS);
  EXPECT_EQ(l.total, 10u);
  EXPECT_EQ(Key(l.l[7]), "k7");
  // Exactly eight: all read, none cut.
  kv.resize(8);
  PutSlice(&m, kv);
  l = ReadLabelsOnHost(in, kG);
  EXPECT_EQ(l.status, SB_LABELS_OK);
  EXPECT_EQ(l.count, 8);
}

TEST(GoroutineLabels, LongKeyAndValueCutAndMarked) {
  FakeMemory m;
  std::string key(70, 'k'), val(200, 'v');
  PutSlice(&m, {{key, val}, {"short", std::string(128, 'x')}});
  sb_proc_info pi = Info(SB_PI_LABELS_SLICE);
  HostUnwindInput in;
  in.info = &pi;
  in.memory = &m;
  sb_labels l = ReadLabelsOnHost(in, kG);
  ASSERT_EQ(l.count, 2);
  EXPECT_EQ(l.l[0].key_len, SB_LABEL_KEY_LEN);
  EXPECT_EQ(l.l[0].val_len, SB_LABEL_VAL_LEN);
  EXPECT_EQ(l.l[0].flags, SB_LABEL_KEY_CUT | SB_LABEL_VAL_CUT);
  EXPECT_EQ(Key(l.l[0]), key.substr(0, 64));
  EXPECT_EQ(l.l[1].val_len, 128);  // exactly the buffer: not cut
  EXPECT_EQ(l.l[1].flags, 0);
}

// Go 1.19-1.23: g.labels -> *labelMap -> hmap. Buckets: tophash[8], keys[8]string,
// elems[8]string, overflow: 272 bytes.
void PutBucket(FakeMemory* m, uint64_t b, const std::map<int, std::pair<std::string, std::string>>& slots,
               uint8_t empty_top = 0) {
  for (int i = 0; i < 8; i++) {
    auto it = slots.find(i);
    std::string top(1, static_cast<char>(it == slots.end() ? empty_top : 5 + i));
    m->PutBytes(b + i, top);
    if (it != slots.end()) {
      m->PutString(b + 8 + 16 * i, it->second.first);
      m->PutString(b + 136 + 16 * i, it->second.second);
    }
  }
  m->Put64(b + 264, 0);
}

void PutHmap(FakeMemory* m, uint64_t count, uint8_t B, uint64_t buckets, uint64_t oldbuckets) {
  constexpr uint64_t kHmap = 0x400000;
  m->Put64(kG + kLabelsOff, kSet);
  m->Put64(kSet, kHmap);                    // the map variable: *hmap
  m->Put64(kHmap, count);                   // count
  m->Put64(kHmap + 8, uint64_t{B} << 8);    // flags 0, B, noverflow 0, hash0 0
  m->Put64(kHmap + 16, buckets);
  m->Put64(kHmap + 24, oldbuckets);
  m->Put64(kHmap + 32, 0);
  m->Put64(kHmap + 40, 0);
}

TEST(GoroutineLabels, MapLayoutGo119) {
  FakeMemory m;
  PutHmap(&m, 3, 0, 0x500000, 0);
  PutBucket(&m, 0x500000, {{0, {"tenant", "a"}}, {3, {"endpoint", "/api/users"}}, {7, {"k", ""}}},
            /*empty_top=*/1 /* emptyOne */);
  sb_proc_info pi = Info(SB_PI_LABELS_HMAP);
  pi.off.g_labels = kLabelsOff;
  HostUnwindInput in;
  in.info = &pi;
  in.memory = &m;
  sb_labels l = ReadLabelsOnHost(in, kG);
  EXPECT_EQ(l.status, SB_LABELS_OK);
  ASSERT_EQ(l.count, 3);
  EXPECT_EQ(Key(l.l[0]), "tenant");
  EXPECT_EQ(Key(l.l[1]), "endpoint");
  EXPECT_EQ(Val(l.l[1]), "/api/users");
  EXPECT_EQ(Key(l.l[2]), "k");
  EXPECT_EQ(l.l[2].val_len, 0);
}

TEST(GoroutineLabels, GrowingMapReadsOldBucket) {
  FakeMemory m;
  // 9 labels, B = 1, growth in progress: 4 + 2 evacuated to the new buckets, 3 still in the
  // old one (its evacuated slots carry tophash 2..4 and are skipped).
  PutHmap(&m, 9, 1, 0x500000, 0x600000);
  PutBucket(&m, 0x500000, {{0, {"a", "1"}}, {1, {"b", "2"}}, {2, {"c", "3"}}, {3, {"d", "4"}}});
  PutBucket(&m, 0x500000 + 272, {{0, {"e", "5"}}, {1, {"f", "6"}}});
  PutBucket(&m, 0x600000, {{5, {"g", "7"}}, {6, {"h", "8"}}, {7, {"i", "9"}}}, /*empty_top=*/2 /* evacuatedX */);
  sb_proc_info pi = Info(SB_PI_LABELS_HMAP);
  HostUnwindInput in;
  in.info = &pi;
  in.memory = &m;
  sb_labels l = ReadLabelsOnHost(in, kG);
  EXPECT_EQ(l.status, SB_LABELS_TRUNCATED);
  EXPECT_EQ(l.total, 9u);
  ASSERT_EQ(l.count, 8);
  EXPECT_EQ(Key(l.l[5]), "f");
  EXPECT_EQ(Key(l.l[6]), "g");
  EXPECT_EQ(Key(l.l[7]), "h");
}

TEST(GoroutineLabels, NoneMissingFactsAndFaults) {
  FakeMemory m;
  sb_proc_info pi = Info(SB_PI_LABELS_SLICE);
  HostUnwindInput in;
  in.info = &pi;
  in.memory = &m;
  m.Put64(kG + kLabelsOff, 0);  // never labelled
  EXPECT_EQ(ReadLabelsOnHost(in, kG).status, SB_LABELS_NONE);
  EXPECT_EQ(ReadLabelsOnHost(in, 0).status, SB_LABELS_OFF);  // no goroutine: no labels

  sb_proc_info no_layout = Info(0);
  in.info = &no_layout;
  EXPECT_EQ(ReadLabelsOnHost(in, kG).status, SB_LABELS_NO_FACT);
  sb_proc_info no_offset = Info(SB_PI_LABELS_SLICE);
  no_offset.off.g_labels = 0xffff;
  in.info = &no_offset;
  EXPECT_EQ(ReadLabelsOnHost(in, kG).status, SB_LABELS_NO_FACT);

  in.info = &pi;
  PutSlice(&m, {{"a", "1"}, {"b", "2"}});
  const uint64_t second_key_hdr = 0x300000 + 32;
  in.fault_addresses = {second_key_hdr};
  std::set<uint64_t> hit;
  sb_labels l = ReadLabelsOnHost(in, kG, &hit);
  EXPECT_EQ(l.status, SB_LABELS_READ_FAULT);
  EXPECT_EQ(l.count, 1);  // what was read before the fault is kept
  EXPECT_EQ(hit.count(second_key_hdr), 1u);
}

// The g a sample is labelled with is the goroutine whose id it carries: the current user
// goroutine, m.curg on g0 (here: sampled outside Go code, so no switch is crossed), none on a
// g0 without a goroutine.
TEST(GoroutineLabels, SampleNamesItsGoroutine) {
  constexpr uint64_t kFs = 0x7000000, kM = 0x110000, kG0 = 0x120000;
  FakeMemory m;
  sb_proc_info pi = Info(SB_PI_LABELS_SLICE);
  pi.flags |= SB_PI_HAS_TLS;
  pi.tls_g_offset = -8;
  pi.off.g_m = 48;
  pi.off.m_g0 = 0;
  pi.off.m_curg = 192;
  pi.off.m_gsignal = 80;
  pi.off.g_goid = 152;
  m.Put64(kG + 48, kM);
  m.Put64(kG0 + 48, kM);
  m.Put64(kM + 0, kG0);
  m.Put64(kM + 80, 0);
  m.Put64(kG + 152, 42);
  HostUnwindInput in;
  in.info = &pi;
  in.memory = &m;
  sb::unwind::Registers regs;
  regs.pc = 0x1234;
  regs.tls_base = kFs;
  for (uint64_t current : {kG, kG0}) {
    for (uint64_t curg : {kG, uint64_t{0}}) {
      m.Put64(kFs - 8, current);
      m.Put64(kM + 192, curg);
      if (current == kG && curg == 0) continue;  // not a valid state
      auto r = sb::unwind::UnwindOnHost(in, regs, nullptr);
      SCOPED_TRACE(testing::Message() << "current " << current << " curg " << curg);
      EXPECT_EQ(r.sample.goid_g, curg);
      EXPECT_EQ(r.sample.goid, curg ? 42u : 0u);
    }
  }
}

}  // namespace
