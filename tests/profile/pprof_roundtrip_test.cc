// WritePprofGz -> ReadPprofGz must reproduce ProfileData exactly, and the raw protobuf must
// follow the conventions pprof relies on.
#include <gtest/gtest.h>
#include <zlib.h>

#include "profile/gzip.h"
#include "profile/pprof_reader.h"
#include "profile/profile.pb.h"
#include "profile/writers.h"
#include "test_profile.h"

namespace sb::profile {
namespace {

namespace pb = perftools::profiles;

pb::Profile DecodeRaw(const std::string& gz) {
  auto raw = GzipDecompress(gz, 1 << 26);
  EXPECT_TRUE(raw.ok()) << raw.error();
  pb::Profile out;
  EXPECT_TRUE(out.ParseFromString(*raw));
  return out;
}

const std::string& Str(const pb::Profile& p, int64_t i) { return p.string_table(static_cast<int>(i)); }

TEST(PprofRoundTrip, ReadBackEqualsWhatWasWritten) {
  ProfileData in = testing::MakeTestProfile();
  auto gz = WritePprofGz(in);
  ASSERT_TRUE(gz.ok()) << gz.error();
  auto out = ReadPprofGz(*gz);
  ASSERT_TRUE(out.ok()) << out.error();

  EXPECT_EQ(out->period_nanos, testing::kPeriod);
  EXPECT_EQ(out->start_time_nanos, in.start_time_nanos);
  EXPECT_EQ(out->duration_nanos, in.duration_nanos);
  EXPECT_EQ(out->comments, in.comments);

  ASSERT_EQ(out->mappings.size(), 1u);
  EXPECT_EQ(out->mappings[0].start, 0x400000u);
  EXPECT_EQ(out->mappings[0].limit, 0x500000u);
  EXPECT_EQ(out->mappings[0].offset, 0u);
  EXPECT_EQ(out->mappings[0].file, "/usr/bin/app");
  EXPECT_EQ(out->mappings[0].build_id, "abc123");

  ASSERT_EQ(out->locations.size(), in.locations.size());
  for (size_t i = 0; i < in.locations.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(out->locations[i].mapping_index, in.locations[i].mapping_index);
    EXPECT_EQ(out->locations[i].address, in.locations[i].address);
    ASSERT_EQ(out->locations[i].lines.size(), in.locations[i].lines.size());
    for (size_t j = 0; j < in.locations[i].lines.size(); ++j) {
      EXPECT_EQ(out->locations[i].lines[j].function, in.locations[i].lines[j].function);
      EXPECT_EQ(out->locations[i].lines[j].file, in.locations[i].lines[j].file);
      EXPECT_EQ(out->locations[i].lines[j].line, in.locations[i].lines[j].line);
    }
  }
  // Inlined frames keep pprof's order: innermost first, the physical caller last.
  EXPECT_EQ(out->locations[0].lines[0].function, "main.inlinedLeaf");
  EXPECT_EQ(out->locations[0].lines[1].function, "main.leaf");
  EXPECT_EQ(out->locations[3].mapping_index, -1);
  EXPECT_EQ(out->locations[3].lines[0].function, "[stopped: bad_fp]");

  ASSERT_EQ(out->samples.size(), in.samples.size());
  for (size_t i = 0; i < in.samples.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(out->samples[i].locations, in.samples[i].locations);
    EXPECT_EQ(out->samples[i].count, in.samples[i].count);
    EXPECT_EQ(out->samples[i].nanos, in.samples[i].nanos);
    EXPECT_EQ(out->samples[i].labels, in.samples[i].labels);
    EXPECT_EQ(out->samples[i].num_labels, in.samples[i].num_labels);
  }
}

TEST(PprofRoundTrip, RawProtoFollowsPprofConventions) {
  auto gz = WritePprofGz(testing::MakeTestProfile());
  ASSERT_TRUE(gz.ok()) << gz.error();
  // Real gzip framing (magic, deflate method), not raw zlib.
  ASSERT_GE(gz->size(), 10u);
  EXPECT_EQ(static_cast<unsigned char>((*gz)[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>((*gz)[1]), 0x8b);
  EXPECT_EQ((*gz)[2], 8);

  pb::Profile p = DecodeRaw(*gz);
  ASSERT_GT(p.string_table_size(), 0);
  EXPECT_EQ(p.string_table(0), "");

  ASSERT_EQ(p.sample_type_size(), 2);
  EXPECT_EQ(Str(p, p.sample_type(0).type()), "samples");
  EXPECT_EQ(Str(p, p.sample_type(0).unit()), "count");
  EXPECT_EQ(Str(p, p.sample_type(1).type()), "cpu");
  EXPECT_EQ(Str(p, p.sample_type(1).unit()), "nanoseconds");
  EXPECT_EQ(Str(p, p.period_type().type()), "cpu");
  EXPECT_EQ(Str(p, p.period_type().unit()), "nanoseconds");
  EXPECT_EQ(p.period(), testing::kPeriod);
  EXPECT_EQ(Str(p, p.default_sample_type()), "cpu");
  ASSERT_EQ(p.comment_size(), 1);
  EXPECT_EQ(Str(p, p.comment(0)), "switchback test profile");

  // Function dedup by (name, file): 6 distinct functions although main.work appears in two
  // locations' samples and leaf.go hosts two functions.
  EXPECT_EQ(p.function_size(), 6);
  for (const pb::Function& f : p.function()) EXPECT_EQ(f.name(), f.system_name());

  ASSERT_EQ(p.mapping_size(), 1);
  const pb::Mapping& m = p.mapping(0);
  EXPECT_EQ(m.id(), 1u);
  EXPECT_EQ(Str(p, m.build_id()), "abc123");
  EXPECT_TRUE(m.has_functions());
  EXPECT_TRUE(m.has_filenames());
  EXPECT_TRUE(m.has_line_numbers());
  EXPECT_TRUE(m.has_inline_frames());

  // The stop marker has no mapping (id 0) and address 0.
  const pb::Location& stop = p.location(3);
  EXPECT_EQ(stop.mapping_id(), 0u);
  EXPECT_EQ(stop.address(), 0u);

  // Numeric labels carry no unit for ids; string labels carry no number.
  const pb::Sample& s0 = p.sample(0);
  ASSERT_EQ(s0.value_size(), 2);
  EXPECT_EQ(s0.value(0), 5);
  EXPECT_EQ(s0.value(1), 5 * testing::kPeriod);
  std::vector<uint64_t> ids(s0.location_id().begin(), s0.location_id().end());
  EXPECT_EQ(ids, (std::vector<uint64_t>{1, 2, 3}));
  int numeric = 0;
  for (const pb::Label& l : s0.label()) {
    if (l.str() != 0) {
      EXPECT_EQ(Str(p, l.key()), "thread");
      EXPECT_EQ(Str(p, l.str()), "worker");
    } else {
      ++numeric;
      EXPECT_EQ(l.num_unit(), 0);
    }
  }
  EXPECT_EQ(numeric, 2);
}

TEST(PprofRoundTrip, NumericLabelUnitsFromKeySuffix) {
  ProfileData in;
  in.samples.push_back({{}, 1, 1, {}, {{"wait_nanos", 5}, {"alloc_bytes", 7}, {"pid", 1}}});
  auto gz = WritePprofGz(in);
  ASSERT_TRUE(gz.ok());
  pb::Profile p = DecodeRaw(*gz);
  std::map<std::string, std::string> units;
  for (const pb::Label& l : p.sample(0).label()) units[Str(p, l.key())] = Str(p, l.num_unit());
  EXPECT_EQ(units["wait_nanos"], "nanoseconds");
  EXPECT_EQ(units["alloc_bytes"], "bytes");
  EXPECT_EQ(units["pid"], "");
}

TEST(PprofRoundTrip, MappingFlagsAreFalseWhenSymbolsAreMissing) {
  ProfileData in;
  in.mappings.push_back({0x1000, 0x2000, 0, "/bin/stripped", ""});
  in.mappings.push_back({0x3000, 0x4000, 0, "/bin/nolines", ""});
  in.locations.push_back({0, 0x1010, {}});
  in.locations.push_back({1, 0x3010, {{"f", "", 0}}});
  in.samples.push_back({{0, 1}, 1, 1, {}, {}});
  auto gz = WritePprofGz(in);
  ASSERT_TRUE(gz.ok());
  pb::Profile p = DecodeRaw(*gz);
  EXPECT_FALSE(p.mapping(0).has_functions());
  EXPECT_TRUE(p.mapping(1).has_functions());
  EXPECT_FALSE(p.mapping(1).has_filenames());
  EXPECT_FALSE(p.mapping(1).has_line_numbers());
  EXPECT_FALSE(p.mapping(1).has_inline_frames());
}

TEST(PprofRoundTrip, NonUtf8NamesSurvive) {
  // File paths and symbols from a live process are bytes, not necessarily UTF-8.
  ProfileData in;
  std::string name = "main.f\xff\xfe";
  in.mappings.push_back({0x1000, 0x2000, 0, "/tmp/\xc3(bin", ""});
  in.locations.push_back({0, 0x1010, {{name, "/src/\x80.go", 3}}});
  in.samples.push_back({{0}, 1, 1, {{"thread", "\xff"}}, {}});
  auto gz = WritePprofGz(in);
  ASSERT_TRUE(gz.ok());
  auto out = ReadPprofGz(*gz);
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_EQ(out->mappings[0].file, "/tmp/\xc3(bin");
  EXPECT_EQ(out->locations[0].lines[0].function, name);
  EXPECT_EQ(out->locations[0].lines[0].file, "/src/\x80.go");
  EXPECT_EQ(out->samples[0].labels.at("thread"), "\xff");
}

TEST(PprofRoundTrip, WriterRejectsDanglingIndices) {
  ProfileData bad_loc;
  bad_loc.samples.push_back({{7}, 1, 1, {}, {}});
  EXPECT_FALSE(WritePprofGz(bad_loc).ok());
  ProfileData bad_map;
  bad_map.locations.push_back({3, 0x10, {}});
  EXPECT_FALSE(WritePprofGz(bad_map).ok());
}

TEST(PprofReader, AcceptsUncompressedProtobuf) {
  auto gz = WritePprofGz(testing::MakeTestProfile());
  ASSERT_TRUE(gz.ok());
  auto raw = GzipDecompress(*gz, 1 << 26);
  ASSERT_TRUE(raw.ok());
  auto out = ReadPprofGz(*raw);
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_EQ(out->samples.size(), 3u);
}

TEST(PprofReader, GarbageGivesAClearError) {
  for (std::string bad : {std::string(), std::string("hello, world"), std::string("\x1f\x8b\x08garbage", 10),
                          std::string("\xff\xff\xff\xff\xff", 5)}) {
    auto r = ReadPprofGz(bad);
    ASSERT_FALSE(r.ok()) << "accepted: " << bad;
    EXPECT_EQ(r.error().rfind("pprof: ", 0), 0u) << r.error();
  }
}

TEST(PprofReader, TruncatedGzipIsAnError) {
  auto gz = WritePprofGz(testing::MakeTestProfile());
  ASSERT_TRUE(gz.ok());
  auto r = ReadPprofGz(std::string_view(*gz).substr(0, gz->size() / 2));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("gzip"), std::string::npos) << r.error();
}

TEST(PprofReader, DanglingIdsAreErrors) {
  pb::Profile p;
  p.add_string_table("");
  p.add_sample()->add_location_id(9);
  auto r = ReadPprofGz(p.SerializeAsString());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("missing location 9"), std::string::npos) << r.error();

  pb::Profile q;
  q.add_string_table("");
  pb::Location* loc = q.add_location();
  loc->set_id(1);
  loc->add_line()->set_function_id(4);
  r = ReadPprofGz(q.SerializeAsString());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("missing function 4"), std::string::npos) << r.error();

  pb::Profile s;
  s.add_string_table("");
  s.add_mapping()->set_filename(99);
  r = ReadPprofGz(s.SerializeAsString());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("string index"), std::string::npos) << r.error();
}

}  // namespace
}  // namespace sb::profile
