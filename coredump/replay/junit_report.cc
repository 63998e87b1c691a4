#include "coredump/replay/junit_report.h"

#include <cstdio>

namespace sb::coredump {
namespace {

std::string Seconds(double s) {
  char b[32];
  snprintf(b, sizeof(b), "%.3f", s);
  return b;
}

}  // namespace

std::string XmlEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') break;
        out += static_cast<char>(c);
    }
  }
  return out;
}

std::string JunitXml(const std::string& suite, const std::vector<JunitCase>& cases, double seconds) {
  size_t failures = 0, errors = 0;
  for (const auto& c : cases) {
    failures += c.outcome == JunitCase::kFailed;
    errors += c.outcome == JunitCase::kError;
  }
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += "<testsuites tests=\"" + std::to_string(cases.size()) + "\" failures=\"" + std::to_string(failures) +
       "\" errors=\"" + std::to_string(errors) + "\" time=\"" + Seconds(seconds) + "\">\n";
  x += "  <testsuite name=\"" + XmlEscape(suite) + "\" tests=\"" + std::to_string(cases.size()) + "\" failures=\"" +
       std::to_string(failures) + "\" errors=\"" + std::to_string(errors) + "\" skipped=\"0\" time=\"" +
       Seconds(seconds) + "\">\n";
  for (const auto& c : cases) {
    x += "    <testcase name=\"" + XmlEscape(c.name) + "\" classname=\"" + XmlEscape(c.classname) + "\" time=\"" +
         Seconds(c.seconds) + "\"";
    if (c.outcome == JunitCase::kPassed) {
      x += "/>\n";
      continue;
    }
    const char* tag = c.outcome == JunitCase::kFailed ? "failure" : "error";
    std::string body;
    for (const auto& d : c.details) body += XmlEscape(d) + "\n";
    x += ">\n      <" + std::string(tag) + " message=\"" + XmlEscape(c.message) + "\" type=\"" +
         (c.outcome == JunitCase::kFailed ? "StackMismatch" : "ReplayError") + "\">" + body + "</" + tag + ">\n";
    x += "    </testcase>\n";
  }
  x += "  </testsuite>\n</testsuites>\n";
  return x;
}

}  // namespace sb::coredump
