// WriteFlameGraphSvg: a self-contained flame graph in the style of flamegraph.pl. One <g>
// per frame (rect + hover <title> + fitted label); a tiny optional script adds
// click-to-zoom, and the picture is complete without it.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "profile/frames.h"
#include "profile/writers.h"

namespace sb::profile {
namespace {

constexpr double kWidth = 1200;        // whole image
constexpr double kPad = 10;            // left/right margin
constexpr double kPlotWidth = kWidth - 2 * kPad;
constexpr double kFrameHeight = 16;    // one stack level, including a 1px gap
constexpr double kTop = 40;            // room for the title
constexpr double kBottom = 10;
constexpr double kFontSize = 12;
constexpr double kCharWidth = kFontSize * 0.6;  // Verdana-ish average advance
constexpr double kMinFrameWidth = 0.1;          // narrower frames are invisible anyway
// Deeper stacks are cut (with a marker frame) rather than drawn: nobody can read thousands
// of levels, and drawing and freeing the tree recurse once per level.
constexpr size_t kMaxDepth = 1000;

// Frames merged by name along the path from the root, the structure a flame graph draws.
struct Node {
  int64_t count = 0;
  std::map<std::string, std::unique_ptr<Node>> children;  // sorted: stable, diffable layout
};

std::string Fmt(const char* format, double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// Length of the valid UTF-8 sequence at S[I], or 0 if the bytes there are not one.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  }
  return n;
}

// Escapes the five XML specials, drops control characters XML 1.0 cannot carry at all, and
// replaces invalid UTF-8 (names and paths are raw bytes) with U+FFFD: browsers refuse to
// show an SVG with a single bad byte.
std::string XmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    size_t n = Utf8SequenceLength(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    if (n > 1) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    ++i;
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += (static_cast<unsigned char>(c) < 0x20 && c != '\t') ? '?' : c;
    }
  }
  return out;
}

// Shortens NAME to what fits in WIDTH pixels ("" when not even a few characters fit), never
// cutting a UTF-8 sequence in half.
std::string FitLabel(const std::string& name, double width) {
  double fit = (width - 6) / kCharWidth;
  if (fit < 3) return "";
  size_t chars = static_cast<size_t>(fit);
  if (name.size() <= chars) return name;
  size_t cut = chars - 2;
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
  return name.substr(0, cut) + "..";
}

bool IsIncompleteMarker(const std::string& name) {
  return name.rfind("[stopped:", 0) == 0 || name == kNoStackFrame;
}

// Warm colors (flamegraph.pl's "hot" palette) chosen by a hash of the name, so a function
// keeps its color across runs and graphs; stop markers are grey to stand out as gaps.
std::string FrameColor(const std::string& name) {
  if (IsIncompleteMarker(name)) return "rgb(160,160,160)";
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  int r = 205 + static_cast<int>(h % 51);
  int g = static_cast<int>((h >> 16) % 231);
  int b = static_cast<int>((h >> 32) % 56);
  return "rgb(" + std::to_string(r) + "," + std::to_string(g) + "," + std::to_string(b) + ")";
}

class SvgWriter {
 public:
  SvgWriter(int64_t total, double height) : total_(total), height_(height) {}

  // Draws NODE at DEPTH (0 = bottom) starting OFFSET samples from the left, then its children.
  void Draw(const std::string& name, const Node& node, int depth, int64_t offset) {
    double x = kPad + kPlotWidth * static_cast<double>(offset) / static_cast<double>(total_);
    double w = kPlotWidth * static_cast<double>(node.count) / static_cast<double>(total_);
    if (w < kMinFrameWidth) return;
    double y = height_ - kBottom - (depth + 1) * kFrameHeight;
    double pct = 100.0 * static_cast<double>(node.count) / static_cast<double>(total_);
    std::string esc = XmlEscape(name);
    // data-* carry the unscaled geometry for the zoom script.
    out_ += "<g class=\"f\" data-n=\"" + esc + "\" data-x=\"" +
            Fmt("%.6f", static_cast<double>(offset) / static_cast<double>(total_)) +
            "\" data-w=\"" + Fmt("%.6f", static_cast<double>(node.count) / static_cast<double>(total_)) +
            "\">";
    out_ += "<title>" + esc + " (" + std::to_string(node.count) + " samples, " +
            Fmt("%.2f", pct) + "%)</title>";
    out_ += "<rect x=\"" + Fmt("%.2f", x) + "\" y=\"" + Fmt("%.1f", y) + "\" width=\"" +
            Fmt("%.2f", w) + "\" height=\"" + Fmt("%.1f", kFrameHeight - 1) + "\" fill=\"" +
            FrameColor(name) + "\" rx=\"2\"/>";
    out_ += "<text x=\"" + Fmt("%.2f", x + 3) + "\" y=\"" + Fmt("%.1f", y + kFrameHeight - 4.5) +
            "\">" + XmlEscape(FitLabel(name, w)) + "</text></g>\n";
    int64_t child_offset = offset;
    for (const auto& [child_name, child] : node.children) {
      Draw(child_name, *child, depth + 1, child_offset);
      child_offset += child->count;
    }
  }

  std::string Take() { return std::move(out_); }

 private:
  int64_t total_;
  double height_;
  std::string out_;
};

// Click a frame to zoom into it (its ancestors stretch to full width); click the bottom
// "all" frame to reset. Kept in CDATA so it needs no escaping.
constexpr char kZoomScript[] = R"(<script type="text/ecmascript"><![CDATA[
(function () {
  var W = 1180, X0 = 10, CW = 7.2;  // kPlotWidth, kPad, kCharWidth
  function fit(n, px) {
    var k = Math.floor((px - 6) / CW);
    if (k < 3) return "";
    return n.length <= k ? n : n.substr(0, k - 2) + "..";
  }
  function zoom(x0, w0) {
    var gs = document.querySelectorAll("g.f");
    for (var i = 0; i < gs.length; i++) {
      var g = gs[i];
      var x = (+g.getAttribute("data-x") - x0) / w0, w = +g.getAttribute("data-w") / w0;
      if (x < 0) { w += x; x = 0; }
      if (x + w > 1) w = 1 - x;
      if (w * W < 0.1) { g.style.display = "none"; continue; }
      g.style.display = "";
      g.querySelector("rect").setAttribute("x", X0 + x * W);
      g.querySelector("rect").setAttribute("width", w * W);
      g.querySelector("text").setAttribute("x", X0 + x * W + 3);
      g.querySelector("text").textContent = fit(g.getAttribute("data-n"), w * W);
    }
  }
  document.addEventListener("click", function (e) {
    var g = e.target.closest ? e.target.closest("g.f") : null;
    if (g) zoom(+g.getAttribute("data-x"), +g.getAttribute("data-w"));
  });
})();
]]></script>
)";

}  // namespace

std::string WriteFlameGraphSvg(const ProfileData& p, const std::string& title) {
  Node root;
  int max_depth = 0;
  for (const Sample& s : p.samples) {
    if (s.count <= 0) continue;
    root.count += s.count;
    Node* node = &root;
    int depth = 0;
    std::vector<std::string> frames = RootFirstFrames(p, s);
    if (frames.size() > kMaxDepth) {
      size_t cut = frames.size() - (kMaxDepth - 1);
      frames.resize(kMaxDepth - 1);
      frames.push_back("[" + std::to_string(cut) + " deeper frames not shown]");
    }
    for (const std::string& frame : frames) {
      std::unique_ptr<Node>& child = node->children[frame];
      if (!child) child = std::make_unique<Node>();
      node = child.get();
      node->count += s.count;
      ++depth;
    }
    max_depth = std::max(max_depth, depth);
  }

  // Depth 0 is the synthetic "all" frame, so there are max_depth + 1 levels.
  double height = kTop + (max_depth + 1) * kFrameHeight + kBottom;
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + Fmt("%.0f", kWidth) +
         "\" height=\"" + Fmt("%.0f", height) + "\" viewBox=\"0 0 " + Fmt("%.0f", kWidth) + " " +
         Fmt("%.0f", height) + "\" font-family=\"Verdana, sans-serif\" font-size=\"" +
         Fmt("%.0f", kFontSize) + "\">\n";
  out += "<style>g.f { cursor: pointer; } g.f:hover rect { stroke: #000; stroke-width: 0.5; } "
         "text { pointer-events: none; }</style>\n";
  out += kZoomScript;
  out += "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#fdfaf4\"/>\n";
  out += "<text x=\"" + Fmt("%.0f", kWidth / 2) +
         "\" y=\"24\" text-anchor=\"middle\" font-size=\"17\">" + XmlEscape(title) + "</text>\n";
  if (root.count == 0) {
    out += "<text x=\"" + Fmt("%.0f", kWidth / 2) +
           "\" y=\"" + Fmt("%.0f", kTop + 12) + "\" text-anchor=\"middle\">No samples</text>\n";
  } else {
    SvgWriter w(root.count, height);
    w.Draw("all", root, 0, 0);
    out += w.Take();
  }
  out += "</svg>\n";
  return out;
}

}  // namespace sb::profile
