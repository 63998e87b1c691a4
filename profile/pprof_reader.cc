#include "profile/pprof_reader.h"

#include <limits>
#include <string>
#include <unordered_map>

#include "profile/gzip.h"
#include "profile/profile.pb.h"

namespace sb::profile {
namespace {

namespace pb = perftools::profiles;

// pprof files are small relative to this; the cap only stops decompression bombs.
constexpr size_t kMaxDecompressed = size_t{1} << 30;

// Converts one parsed Profile; every index taken from the file is checked first because
// the file may come from anywhere.
class Converter {
 public:
  explicit Converter(const pb::Profile& in) : in_(in) {}

  Result<ProfileData> Run() {
    if (in_.string_table_size() == 0 || !in_.string_table(0).empty()) {
      return MakeError("pprof: not a profile (string_table[0] must be the empty string)");
    }
    ProfileData out;
    std::string period_unit;
    if (!Str(in_.period_type().unit(), &period_unit)) return Bad("period_type");
    // Only a period in nanoseconds means "nanoseconds per sample" as ProfileData defines it.
    if (period_unit == "nanoseconds") out.period_nanos = in_.period();
    out.start_time_nanos = in_.time_nanos();
    out.duration_nanos = in_.duration_nanos();
    for (int64_t c : in_.comment()) {
      std::string text;
      if (!Str(c, &text)) return Bad("comment");
      out.comments.push_back(std::move(text));
    }
    if (auto st = Mappings(&out); !st.ok()) return Error{st.error()};
    if (auto st = Functions(); !st.ok()) return Error{st.error()};
    if (auto st = Locations(&out); !st.ok()) return Error{st.error()};
    if (auto st = Samples(&out); !st.ok()) return Error{st.error()};
    return out;
  }

 private:
  static Error Bad(const std::string& what) {
    return MakeError("pprof: corrupt profile (bad string index in " + what + ")");
  }

  bool Str(int64_t index, std::string* out) const {
    if (index < 0 || index >= in_.string_table_size()) return false;
    *out = in_.string_table(static_cast<int>(index));
    return true;
  }

  Status Mappings(ProfileData* out) {
    for (const pb::Mapping& pm : in_.mapping()) {
      Mapping m;
      m.start = pm.memory_start();
      m.limit = pm.memory_limit();
      m.offset = pm.file_offset();
      if (!Str(pm.filename(), &m.file) || !Str(pm.build_id(), &m.build_id)) return Bad("mapping");
      if (pm.id() == 0 || !mapping_ids_.emplace(pm.id(), out->mappings.size()).second) {
        return MakeError("pprof: corrupt profile (mapping id " + std::to_string(pm.id()) +
                         " is zero or repeated)");
      }
      out->mappings.push_back(std::move(m));
    }
    return Status::Ok();
  }

  Status Functions() {
    for (const pb::Function& pf : in_.function()) {
      Line l;
      if (!Str(pf.name(), &l.function) || !Str(pf.filename(), &l.file)) return Bad("function");
      if (pf.id() == 0 || !functions_.emplace(pf.id(), std::move(l)).second) {
        return MakeError("pprof: corrupt profile (function id " + std::to_string(pf.id()) +
                         " is zero or repeated)");
      }
    }
    return Status::Ok();
  }

  Status Locations(ProfileData* out) {
    for (const pb::Location& pl : in_.location()) {
      Location loc;
      loc.address = pl.address();
      if (pl.mapping_id() != 0) {
        auto it = mapping_ids_.find(pl.mapping_id());
        if (it == mapping_ids_.end()) {
          return MakeError("pprof: corrupt profile (location " + std::to_string(pl.id()) +
                           " refers to missing mapping " + std::to_string(pl.mapping_id()) + ")");
        }
        loc.mapping_index = static_cast<int>(it->second);
      }
      for (const pb::Line& pline : pl.line()) {
        auto it = functions_.find(pline.function_id());
        if (it == functions_.end()) {
          return MakeError("pprof: corrupt profile (location " + std::to_string(pl.id()) +
                           " refers to missing function " + std::to_string(pline.function_id()) + ")");
        }
        Line l = it->second;
        l.line = pline.line();
        loc.lines.push_back(std::move(l));
      }
      if (pl.id() == 0 ||
          !location_ids_.emplace(pl.id(), static_cast<uint32_t>(out->locations.size())).second) {
        return MakeError("pprof: corrupt profile (location id " + std::to_string(pl.id()) +
                         " is zero or repeated)");
      }
      out->locations.push_back(std::move(loc));
    }
    return Status::Ok();
  }

  // Finds which value index holds the sample count and which the cpu nanoseconds.
  Status ValueIndices(int* count_index, int* nanos_index) const {
    *count_index = -1;
    *nanos_index = -1;
    for (int i = 0; i < in_.sample_type_size(); ++i) {
      std::string type, unit;
      if (!Str(in_.sample_type(i).type(), &type) || !Str(in_.sample_type(i).unit(), &unit)) {
        return Bad("sample_type");
      }
      if (*count_index < 0 && (type == "samples" || unit == "count")) *count_index = i;
      if (*nanos_index < 0 && (type == "cpu" || unit == "nanoseconds")) *nanos_index = i;
    }
    if (*count_index < 0 && in_.sample_type_size() > 0 && *nanos_index != 0) *count_index = 0;
    return Status::Ok();
  }

  Status Samples(ProfileData* out) {
    int count_index = -1, nanos_index = -1;
    if (auto st = ValueIndices(&count_index, &nanos_index); !st.ok()) return st;
    for (const pb::Sample& ps : in_.sample()) {
      if (ps.value_size() != in_.sample_type_size()) {
        return MakeError("pprof: corrupt profile (sample has " + std::to_string(ps.value_size()) +
                         " values for " + std::to_string(in_.sample_type_size()) + " sample types)");
      }
      Sample s;
      for (uint64_t id : ps.location_id()) {
        auto it = location_ids_.find(id);
        if (it == location_ids_.end()) {
          return MakeError("pprof: corrupt profile (sample refers to missing location " +
                           std::to_string(id) + ")");
        }
        s.locations.push_back(it->second);
      }
      if (count_index >= 0) s.count = ps.value(count_index);
      if (nanos_index >= 0) s.nanos = ps.value(nanos_index);
      for (const pb::Label& pl : ps.label()) {
        std::string key, str;
        if (!Str(pl.key(), &key) || !Str(pl.str(), &str)) return Bad("label");
        // pprof marks a string label by a nonzero str index; otherwise the label is numeric.
        if (pl.str() != 0) {
          s.labels[key] = std::move(str);
        } else {
          s.num_labels[key] = pl.num();
        }
      }
      out->samples.push_back(std::move(s));
    }
    return Status::Ok();
  }

  const pb::Profile& in_;
  std::unordered_map<uint64_t, size_t> mapping_ids_;
  std::unordered_map<uint64_t, Line> functions_;
  std::unordered_map<uint64_t, uint32_t> location_ids_;
};

}  // namespace

Result<ProfileData> ReadPprofGz(std::string_view bytes) {
  std::string inflated;
  if (LooksGzipped(bytes)) {
    auto r = GzipDecompress(bytes, kMaxDecompressed);
    if (!r.ok()) return MakeError("pprof: " + r.error());
    inflated = std::move(r).value();
    bytes = inflated;
  }
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return MakeError("pprof: profile larger than 2 GiB");
  }
  pb::Profile in;
  if (bytes.empty() || !in.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return MakeError("pprof: not a profile (input is not gzip or protobuf profile data)");
  }
  return Converter(in).Run();
}

}  // namespace sb::profile
