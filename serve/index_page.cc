#include "serve/index_page.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace sb::serve {

double WholeShare(const ProcessInfo& p) {
  return p.samples == 0 ? 0.0 : static_cast<double>(p.whole_samples) / static_cast<double>(p.samples);
}

std::string HtmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string RenderIndexHtml(const std::vector<ProcessInfo>& processes) {
  std::string b =
      "<html>\n<head>\n<title>/debug/pprof/</title>\n</head>\n<body>\n/debug/pprof/ (switchback agent)\n<br>\n"
      "<p>CPU profile of one process: <code>go tool pprof "
      "http://HOST:PORT/debug/pprof/profile?pid=PID&amp;seconds=30</code>; of every process of a binary: "
      "<code>?exe=REGEX</code>. The same table as JSON: <a href='?format=json'>?format=json</a>.</p>\n"
      "<table>\n<thead><tr><td>pid</td><td>exe</td><td>go version</td><td>runtime facts</td><td>samples</td>"
      "<td>whole stacks</td><td>labels</td><td>latest window</td><td>state</td><td>profile</td></tr></thead>\n";
  for (const auto& p : processes) {
    char share[32];
    snprintf(share, sizeof share, "%.1f%%", 100.0 * WholeShare(p));
    std::string labels;
    for (const auto& [k, v] : p.labels) labels += (labels.empty() ? "" : ", ") + HtmlEscape(k) + "=" + HtmlEscape(v);
    std::string pid = std::to_string(p.pid);
    b += "<tr><td>" + pid + "</td><td>" + HtmlEscape(p.exe) + "</td><td>" + HtmlEscape(p.go_version) + "</td><td>" +
         HtmlEscape(p.facts_source) + "</td><td>" + std::to_string(p.samples) + "</td><td>" + share + "</td><td>" +
         labels + "</td><td>" + HtmlEscape(p.latest_window_file) + "</td><td>" + (p.exited ? "exited" : "running") +
         "</td><td><a href='profile?pid=" + pid + "&amp;seconds=30'>30 s</a></td></tr>\n";
  }
  b += "</table>\n</body>\n</html>\n";
  return b;
}

std::string RenderIndexJson(const std::vector<ProcessInfo>& processes) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& p : processes) {
    rows.push_back({{"pid", p.pid},
                    {"exe", p.exe},
                    {"go_version", p.go_version},
                    {"facts_source", p.facts_source},
                    {"samples", p.samples},
                    {"whole_samples", p.whole_samples},
                    {"whole_share", WholeShare(p)},
                    {"latest_window_file", p.latest_window_file},
                    {"labels", p.labels},
                    {"exited", p.exited}});
  }
  // Invalid UTF-8 in an exe path must not throw: replace it.
  return nlohmann::json{{"processes", rows}}.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace sb::serve
