// ProfileBuilder: deduplicates mappings and locations and merges samples so that producers
// can add one raw stack at a time and still get a compact ProfileData.
#include <algorithm>
#include <string>
#include <utility>

#include "profile/profile_data.h"

namespace sb::profile {
namespace {

// Builds unambiguous map keys: every field is length-prefixed, so ("a;b", "c") and
// ("a", "b;c") can never collide however the names are spelled.
class Key {
 public:
  Key& Add(std::string_view s) {
    out_ += std::to_string(s.size());
    out_ += ':';
    out_ += s;
    return *this;
  }
  Key& Add(int64_t v) { return Add(std::to_string(v)); }
  Key& AddU(uint64_t v) { return Add(std::to_string(v)); }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

}  // namespace

int ProfileBuilder::AddMapping(const Mapping& m) {
  std::string key = Key().AddU(m.start).AddU(m.limit).AddU(m.offset).Add(m.file).Take();
  auto [it, inserted] = mapping_index_.try_emplace(std::move(key), 0);
  if (inserted) {
    it->second = static_cast<int>(data_.mappings.size());
    data_.mappings.push_back(m);
  } else if (data_.mappings[it->second].build_id.empty()) {
    // The same mapping seen again may carry a build id the first sighting lacked.
    data_.mappings[it->second].build_id = m.build_id;
  }
  return it->second;
}

uint32_t ProfileBuilder::AddLocation(const Location& loc) {
  Key key;
  key.Add(loc.mapping_index).AddU(loc.address).AddU(loc.lines.size());
  for (const Line& l : loc.lines) key.Add(l.function).Add(l.file).Add(l.line);
  auto [it, inserted] = location_index_.try_emplace(key.Take(), 0);
  if (inserted) {
    it->second = static_cast<uint32_t>(data_.locations.size());
    data_.locations.push_back(loc);
  }
  return it->second;
}

void ProfileBuilder::AddSample(Sample s) {
  Key key;
  key.AddU(s.locations.size());
  for (uint32_t l : s.locations) key.AddU(l);
  key.AddU(s.labels.size());
  for (const auto& [k, v] : s.labels) key.Add(k).Add(v);
  key.AddU(s.num_labels.size());
  for (const auto& [k, v] : s.num_labels) key.Add(k).Add(v);
  auto [it, inserted] = sample_index_.try_emplace(key.Take(), data_.samples.size());
  if (inserted) {
    data_.samples.push_back(std::move(s));
    return;
  }
  Sample& existing = data_.samples[it->second];
  existing.count += s.count;
  existing.nanos += s.nanos;
  existing.max_nanos = std::max(existing.max_nanos, s.max_nanos);
}

}  // namespace sb::profile
