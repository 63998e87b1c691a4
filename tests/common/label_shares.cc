#include "tests/common/label_shares.h"

namespace sb::test {

LabelMap LabelsExcept(const profile::Sample& s, const std::set<std::string>& own) {
  LabelMap out;
  for (const auto& [k, v] : s.labels)
    if (!own.count(k)) out[k] = v;
  return out;
}

std::string LabelSetKey(const LabelMap& l) {
  std::string k;
  for (const auto& [key, v] : l) k += (k.empty() ? "" : ",") + key + "=" + v;
  return k.empty() ? "(none)" : k;
}

std::map<std::string, double> LabelSetShares(const profile::ProfileData& p, const std::set<std::string>& own,
                                             int64_t* total) {
  std::map<std::string, int64_t> n;
  *total = 0;
  for (const auto& s : p.samples) {
    n[LabelSetKey(LabelsExcept(s, own))] += s.count;
    *total += s.count;
  }
  std::map<std::string, double> out;
  for (const auto& [k, c] : n) out[k] = *total ? static_cast<double>(c) / static_cast<double>(*total) : 0;
  return out;
}

}  // namespace sb::test
