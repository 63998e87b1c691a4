// The Prometheus text exposition format (version 0.0.4): one HELP and TYPE line per metric
// family, then its samples; label values escaped (\\, \", \n). Names are ours and fixed, so
// they are only checked in debug builds.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace sb::serve {

class PrometheusText {
 public:
  using Labels = std::vector<std::pair<std::string, std::string>>;
  // Starts a family; TYPE is "counter" or "gauge". Counter names end in _total.
  void Family(const std::string& name, const std::string& type, const std::string& help);
  // A sample of the current family (name defaults to the family's).
  void Sample(double value, const Labels& labels = {});
  void Sample(uint64_t value, const Labels& labels = {});
  // A family with one sample per map entry, labelled LABEL=key.
  void CounterMap(const std::string& name, const std::string& help, const std::string& label,
                  const std::map<std::string, uint64_t>& values);
  const std::string& str() const { return out_; }

  static std::string EscapeLabelValue(const std::string& v);

 private:
  void SampleText(const std::string& value, const Labels& labels);
  std::string out_;
  std::string family_;
};

}  // namespace sb::serve
