// WritePprofGz: ProfileData -> gzip-compressed profile.proto, the format `go tool pprof`,
// the pprof web UI and most continuous-profiling backends read.
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>

#include "profile/gzip.h"
#include "profile/profile.pb.h"
#include "profile/writers.h"

namespace sb::profile {
namespace {

namespace pb = perftools::profiles;

// Interns strings into Profile.string_table; index 0 is "" as the format requires.
class StringTable {
 public:
  explicit StringTable(pb::Profile* out) : out_(out) { Intern(""); }
  int64_t Intern(const std::string& s) {
    auto [it, inserted] = index_.try_emplace(s, static_cast<int64_t>(index_.size()));
    if (inserted) out_->add_string_table(s);
    return it->second;
  }

 private:
  pb::Profile* out_;
  std::unordered_map<std::string, int64_t> index_;
};

// Interns functions by (name, file): one inlined function appearing in many locations is
// stored once, as pprof's own writers do.
class FunctionTable {
 public:
  FunctionTable(pb::Profile* out, StringTable* strings) : out_(out), strings_(strings) {}
  uint64_t Intern(const Line& l) {
    auto [it, inserted] = ids_.try_emplace({l.function, l.file}, ids_.size() + 1);
    if (inserted) {
      pb::Function* f = out_->add_function();
      f->set_id(it->second);
      f->set_name(strings_->Intern(l.function));
      // Go symbol names are already the "system" names; pprof shows name, so set both.
      f->set_system_name(f->name());
      f->set_filename(strings_->Intern(l.file));
    }
    return it->second;
  }

 private:
  pb::Profile* out_;
  StringTable* strings_;
  std::map<std::pair<std::string, std::string>, uint64_t> ids_;
};

// Numeric label units pprof understands, guessed from the key's suffix. pid, tid and
// goroutine ids have no unit, and pprof prints unit-less numbers as they are.
std::string NumUnitFor(const std::string& key) {
  auto ends_with = [&](std::string_view suffix) {
    return key.size() >= suffix.size() && key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with("_nanos") || ends_with("_ns")) return "nanoseconds";
  if (ends_with("_bytes")) return "bytes";
  return "";
}

// Symbol completeness of each mapping. pprof re-symbolizes mappings whose flags are false,
// which would fail (or print warnings) on a machine without the profiled binaries.
struct MappingFlags {
  bool any = false;
  bool functions = true, filenames = true, line_numbers = true, inline_frames = false;
};

std::vector<MappingFlags> ComputeMappingFlags(const ProfileData& p) {
  std::vector<MappingFlags> flags(p.mappings.size());
  for (const Location& loc : p.locations) {
    if (loc.mapping_index < 0 || static_cast<size_t>(loc.mapping_index) >= flags.size()) continue;
    MappingFlags& f = flags[loc.mapping_index];
    f.any = true;
    if (loc.lines.empty()) f.functions = f.filenames = f.line_numbers = false;
    if (loc.lines.size() > 1) f.inline_frames = true;
    for (const Line& l : loc.lines) {
      if (l.function.empty()) f.functions = false;
      if (l.file.empty()) f.filenames = false;
      if (l.line <= 0) f.line_numbers = false;
    }
  }
  // A mapping with no locations has nothing to symbolize; claiming nothing is the honest
  // answer.
  for (MappingFlags& f : flags) {
    if (!f.any) f.functions = f.filenames = f.line_numbers = false;
  }
  return flags;
}

void SetValueType(pb::ValueType* vt, StringTable* strings, const std::string& type,
                  const std::string& unit) {
  vt->set_type(strings->Intern(type));
  vt->set_unit(strings->Intern(unit));
}

}  // namespace

Result<std::string> WritePprofGz(const ProfileData& p) {
  pb::Profile out;
  StringTable strings(&out);
  FunctionTable functions(&out, &strings);

  // Values are [count, nanos] in this order in every sample below.
  SetValueType(out.add_sample_type(), &strings, p.count_type, "count");
  SetValueType(out.add_sample_type(), &strings, p.nanos_type, "nanoseconds");
  if (!p.max_nanos_type.empty()) SetValueType(out.add_sample_type(), &strings, p.max_nanos_type, "nanoseconds");
  SetValueType(out.mutable_period_type(), &strings, p.nanos_type, "nanoseconds");
  out.set_period(p.period_nanos);
  out.set_default_sample_type(strings.Intern(p.nanos_type));
  out.set_time_nanos(p.start_time_nanos);
  out.set_duration_nanos(p.duration_nanos);
  for (const std::string& c : p.comments) out.add_comment(strings.Intern(c));

  // pprof ids must be nonzero: ProfileData index i becomes id i + 1 for mappings and
  // locations, so a reader can map them straight back.
  std::vector<MappingFlags> flags = ComputeMappingFlags(p);
  for (size_t i = 0; i < p.mappings.size(); ++i) {
    const Mapping& m = p.mappings[i];
    pb::Mapping* pm = out.add_mapping();
    pm->set_id(i + 1);
    pm->set_memory_start(m.start);
    pm->set_memory_limit(m.limit);
    pm->set_file_offset(m.offset);
    pm->set_filename(strings.Intern(m.file));
    pm->set_build_id(strings.Intern(m.build_id));
    pm->set_has_functions(flags[i].functions);
    pm->set_has_filenames(flags[i].filenames);
    pm->set_has_line_numbers(flags[i].line_numbers);
    pm->set_has_inline_frames(flags[i].inline_frames);
  }

  for (size_t i = 0; i < p.locations.size(); ++i) {
    const Location& loc = p.locations[i];
    pb::Location* pl = out.add_location();
    pl->set_id(i + 1);
    if (loc.mapping_index >= 0) {
      if (static_cast<size_t>(loc.mapping_index) >= p.mappings.size()) {
        return MakeError("pprof: location " + std::to_string(i) + " refers to missing mapping " +
                         std::to_string(loc.mapping_index));
      }
      pl->set_mapping_id(loc.mapping_index + 1);
    }
    pl->set_address(loc.address);
    // Same order as pprof: innermost inlined function first, the real caller last.
    for (const Line& l : loc.lines) {
      pb::Line* line = pl->add_line();
      line->set_function_id(functions.Intern(l));
      line->set_line(l.line);
    }
  }

  for (const Sample& s : p.samples) {
    pb::Sample* ps = out.add_sample();
    for (uint32_t l : s.locations) {
      if (l >= p.locations.size()) {
        return MakeError("pprof: sample refers to missing location " + std::to_string(l));
      }
      ps->add_location_id(l + 1);
    }
    ps->add_value(s.count);
    ps->add_value(s.nanos);
    if (!p.max_nanos_type.empty()) ps->add_value(s.max_nanos);
    for (const auto& [k, v] : s.labels) {
      pb::Label* label = ps->add_label();
      label->set_key(strings.Intern(k));
      label->set_str(strings.Intern(v));
    }
    for (const auto& [k, v] : s.num_labels) {
      pb::Label* label = ps->add_label();
      label->set_key(strings.Intern(k));
      label->set_num(v);
      std::string unit = NumUnitFor(k);
      if (!unit.empty()) label->set_num_unit(strings.Intern(unit));
    }
  }

  std::string raw;
  if (!out.SerializeToString(&raw)) return MakeError("pprof: protobuf serialization failed");
  return GzipCompress(raw);
}

}  // namespace sb::profile
