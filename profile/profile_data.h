// ProfileData: the aggregated, symbolized result of a recording, independent of how it was
// gathered (live BPF or coredump replay). Every writer (pprof, folded, SVG) reads only this, so
// the outputs always agree with each other.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sb::profile {

struct Mapping {
  uint64_t start = 0;   // runtime address range of the mapping
  uint64_t limit = 0;
  uint64_t offset = 0;  // file offset of start
  std::string file;     // path, or "[vdso]"
  std::string build_id;
};

struct Line {
  std::string function;
  std::string file;
  int64_t line = 0;
};

// One program counter, with its inline-expanded frames (innermost first). Pseudo frames such
// as "[stopped: stale_goroutine]" are locations with mapping_index -1 and one Line whose
// function is that text.
struct Location {
  int mapping_index = -1;  // index into ProfileData::mappings, -1 for none
  uint64_t address = 0;
  std::vector<Line> lines;
};

struct Sample {
  std::vector<uint32_t> locations;  // indices into ProfileData::locations, leaf first
  int64_t count = 0;                // samples
  int64_t nanos = 0;                // cpu time (count * period)
  std::map<std::string, std::string> labels;      // "thread", "stop" ...
  std::map<std::string, int64_t> num_labels;      // "pid", "tid", "goroutine"
  int64_t max_nanos = 0;  // last, so that positional initializers of the fields above stay valid; longest call (trace --stacks; written when max_nanos_type is set)
};

struct ProfileData {
  std::vector<Mapping> mappings;
  std::vector<Location> locations;
  std::vector<Sample> samples;
  int64_t period_nanos = 0;      // nanoseconds per sample (1e9 / frequency)
  int64_t start_time_nanos = 0;  // wall clock, unix epoch
  int64_t duration_nanos = 0;
  std::vector<std::string> comments;
  // Names of the two sample values (pprof sample types): a CPU profile counts samples and CPU
  // time; a latency profile (switchback trace) counts calls and time spent in them.
  std::string count_type = "samples";
  std::string nanos_type = "cpu";
  std::string max_nanos_type;  // "" = no third value; "max" in trace --stacks profiles
};

// Adds locations and mappings without duplicates; helps producers build ProfileData.
class ProfileBuilder {
 public:
  int AddMapping(const Mapping& m);  // dedup by (start, limit, offset, file)
  uint32_t AddLocation(const Location& loc);  // dedup by (mapping, address, lines)
  // Merges with an existing sample that has the same locations and labels.
  void AddSample(Sample s);
  ProfileData& data() { return data_; }
  // Leaves the builder empty and reusable (the dedup indices would dangle otherwise).
  ProfileData Take() {
    location_index_.clear();
    mapping_index_.clear();
    sample_index_.clear();
    ProfileData out = std::move(data_);
    data_ = ProfileData();
    return out;
  }

 private:
  ProfileData data_;
  std::map<std::string, uint32_t> location_index_;
  std::map<std::string, int> mapping_index_;
  std::map<std::string, size_t> sample_index_;
};

}  // namespace sb::profile
