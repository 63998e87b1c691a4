#include "serve/prometheus_text.h"

#include <cassert>
#include <cmath>
#include <cstdio>

namespace sb::serve {

std::string PrometheusText::EscapeLabelValue(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

void PrometheusText::Family(const std::string& name, const std::string& type, const std::string& help) {
  assert(type != "counter" || name.size() > 6);
  family_ = name;
  out_ += "# HELP " + name + " " + help + "\n";
  out_ += "# TYPE " + name + " " + type + "\n";
}

void PrometheusText::SampleText(const std::string& value, const Labels& labels) {
  out_ += family_;
  if (!labels.empty()) {
    out_ += '{';
    for (size_t i = 0; i < labels.size(); i++) {
      if (i > 0) out_ += ',';
      out_ += labels[i].first + "=\"" + EscapeLabelValue(labels[i].second) + "\"";
    }
    out_ += '}';
  }
  out_ += ' ' + value + '\n';
}

void PrometheusText::Sample(double value, const Labels& labels) {
  char buf[64];
  if (std::isnan(value)) snprintf(buf, sizeof buf, "NaN");
  else snprintf(buf, sizeof buf, "%.17g", value);
  SampleText(buf, labels);
}

void PrometheusText::Sample(uint64_t value, const Labels& labels) { SampleText(std::to_string(value), labels); }

void PrometheusText::CounterMap(const std::string& name, const std::string& help, const std::string& label,
                                const std::map<std::string, uint64_t>& values) {
  Family(name, "counter", help);
  for (const auto& [k, v] : values) Sample(v, {{label, k}});
}

}  // namespace sb::serve
