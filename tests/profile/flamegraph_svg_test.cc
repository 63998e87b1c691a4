#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <regex>
#include <string>
#include <vector>

#include "profile/writers.h"
#include "test_profile.h"

namespace sb::profile {
namespace {

// A deliberately tiny XML check: tags balance and nest, and character data holds no raw
// '<' or stray '&'. Enough to catch broken escaping or a missing close tag.
::testing::AssertionResult WellFormed(const std::string& xml) {
  std::vector<std::string> open;
  size_t i = 0;
  while (i < xml.size()) {
    if (xml[i] == '&') {
      static const std::regex entity("^&(amp|lt|gt|quot|apos);");
      if (!std::regex_search(xml.begin() + i, xml.end(), entity)) {
        return ::testing::AssertionFailure() << "raw '&' at " << i;
      }
      ++i;
      continue;
    }
    if (xml[i] != '<') {
      ++i;
      continue;
    }
    auto skip = [&](const char* start, const char* end) {
      if (xml.compare(i, strlen(start), start) != 0) return false;
      size_t e = xml.find(end, i);
      i = e == std::string::npos ? xml.size() + 1 : e + strlen(end);
      return true;
    };
    if (skip("<?", "?>") || skip("<!--", "-->") || skip("<![CDATA[", "]]>")) {
      if (i > xml.size()) return ::testing::AssertionFailure() << "unterminated special section";
      continue;
    }
    size_t close = xml.find('>', i);
    if (close == std::string::npos) return ::testing::AssertionFailure() << "unterminated tag";
    std::string tag = xml.substr(i + 1, close - i - 1);
    if (tag.find('<') != std::string::npos) return ::testing::AssertionFailure() << "'<' in tag " << tag;
    size_t quotes = std::count(tag.begin(), tag.end(), '"');
    if (quotes % 2 != 0) return ::testing::AssertionFailure() << "unbalanced quotes in " << tag;
    i = close + 1;
    if (tag.back() == '/') continue;
    std::string name = tag.substr(tag[0] == '/' ? 1 : 0);
    name = name.substr(0, name.find_first_of(" \t\n"));
    if (tag[0] != '/') {
      open.push_back(name);
    } else if (open.empty() || open.back() != name) {
      return ::testing::AssertionFailure() << "</" << name << "> closes "
                                         << (open.empty() ? "nothing" : open.back());
    } else {
      open.pop_back();
    }
  }
  if (!open.empty()) return ::testing::AssertionFailure() << "<" << open.back() << "> never closed";
  return ::testing::AssertionSuccess();
}

struct Frame {
  std::string title;
  double x, y, width;
  std::string fill;
};

std::vector<Frame> Frames(const std::string& svg) {
  static const std::regex frame(
      R"re(<title>([^<]*)</title><rect x="([0-9.]+)" y="([0-9.]+)" width="([0-9.]+)" height="[0-9.]+" fill="([^"]+)")re");
  std::vector<Frame> out;
  for (std::sregex_iterator it(svg.begin(), svg.end(), frame), end; it != end; ++it) {
    out.push_back({(*it)[1], std::stod((*it)[2]), std::stod((*it)[3]), std::stod((*it)[4]), (*it)[5]});
  }
  return out;
}

const Frame* Find(const std::vector<Frame>& frames, const std::string& title) {
  for (const Frame& f : frames) {
    if (f.title == title) return &f;
  }
  return nullptr;
}

TEST(FlameGraphSvg, WellFormedWithOneRectPerFrame) {
  std::string svg = WriteFlameGraphSvg(testing::MakeTestProfile(), "cpu profile");
  ASSERT_TRUE(WellFormed(svg));
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find(">cpu profile</text>"), std::string::npos);

  std::vector<Frame> frames = Frames(svg);
  // all, main.main, main.work (x2: under main and under the stop marker), main.leaf,
  // main.inlinedLeaf, main.other, [stopped: bad_fp].
  EXPECT_EQ(frames.size(), 8u);
  for (const char* title :
       {"all (10 samples, 100.00%)", "main.main (8 samples, 80.00%)", "main.work (5 samples, 50.00%)",
        "main.work (2 samples, 20.00%)", "main.leaf (5 samples, 50.00%)",
        "main.inlinedLeaf (5 samples, 50.00%)", "main.other (3 samples, 30.00%)",
        "[stopped: bad_fp] (2 samples, 20.00%)"}) {
    EXPECT_NE(Find(frames, title), nullptr) << title;
  }
}

TEST(FlameGraphSvg, RootAtBottomWidthProportional) {
  std::vector<Frame> frames = Frames(WriteFlameGraphSvg(testing::MakeTestProfile(), "t"));
  const Frame* all = Find(frames, "all (10 samples, 100.00%)");
  const Frame* main = Find(frames, "main.main (8 samples, 80.00%)");
  const Frame* leaf = Find(frames, "main.leaf (5 samples, 50.00%)");
  const Frame* inl = Find(frames, "main.inlinedLeaf (5 samples, 50.00%)");
  ASSERT_TRUE(all && main && leaf && inl);
  EXPECT_GT(all->y, main->y);
  EXPECT_GT(leaf->y, inl->y);  // the inlined callee sits on top of its host
  EXPECT_NEAR(main->width, all->width * 0.8, 0.02);
  EXPECT_NEAR(inl->width, all->width * 0.5, 0.02);
  EXPECT_NEAR(leaf->x, inl->x, 0.01);
}

TEST(FlameGraphSvg, StopMarkersAreGreyOthersWarm) {
  std::vector<Frame> frames = Frames(WriteFlameGraphSvg(testing::MakeTestProfile(), "t"));
  const Frame* stop = Find(frames, "[stopped: bad_fp] (2 samples, 20.00%)");
  ASSERT_NE(stop, nullptr);
  EXPECT_EQ(stop->fill, "rgb(160,160,160)");
  static const std::regex rgb(R"(rgb\((\d+),(\d+),(\d+)\))");
  for (const Frame& f : frames) {
    if (&f == stop) continue;
    std::smatch m;
    ASSERT_TRUE(std::regex_match(f.fill, m, rgb)) << f.fill;
    EXPECT_GE(std::stoi(m[1]), 205) << f.title;  // red-dominant: warm
    EXPECT_LT(std::stoi(m[3]), 56) << f.title;
  }
  // Same name, same color, wherever the frame appears.
  EXPECT_EQ(Find(frames, "main.work (5 samples, 50.00%)")->fill,
            Find(frames, "main.work (2 samples, 20.00%)")->fill);
}

TEST(FlameGraphSvg, EscapesMarkupAndTruncatesLabels) {
  ProfileData p;
  std::string long_name = "pkg.(*Type).Method<&>" + std::string(300, 'x');
  p.locations.push_back({-1, 1, {{"<&>\"'", "", 0}}});
  p.locations.push_back({-1, 2, {{long_name, "", 0}}});
  p.samples.push_back({{0}, 1, 0, {}, {}});
  p.samples.push_back({{1}, 99, 0, {}, {}});
  std::string svg = WriteFlameGraphSvg(p, "a <b> & c");
  ASSERT_TRUE(WellFormed(svg));
  EXPECT_NE(svg.find(">a &lt;b&gt; &amp; c</text>"), std::string::npos);
  EXPECT_NE(svg.find("<title>&lt;&amp;&gt;&quot;&apos; (1 samples, 1.00%)</title>"), std::string::npos);
  // The long name is cut with ".." to fit its ~1168px box; the title keeps all of it.
  EXPECT_NE(svg.find("(99 samples, 99.00%)</title>"), std::string::npos);
  EXPECT_NE(svg.find("xxx..</text>"), std::string::npos);
  EXPECT_EQ(svg.find(std::string(300, 'x') + "</text>"), std::string::npos);
}

TEST(FlameGraphSvg, InvalidUtf8BecomesReplacementCharacter) {
  ProfileData p;
  p.locations.push_back({-1, 1, {{"bad\xff\xc3(name\x01 ok\xc3\xa9", "", 0}}});
  p.samples.push_back({{0}, 1, 0, {}, {}});
  std::string svg = WriteFlameGraphSvg(p, "t");
  EXPECT_NE(svg.find("<title>bad\xEF\xBF\xBD\xEF\xBF\xBD(name? ok\xc3\xa9 (1 samples"), std::string::npos)
      << svg;
}

TEST(FlameGraphSvg, VeryDeepStacksAreCutWithAMarker) {
  // Drawing recurses per level; a hostile or corrupt profile must not overflow the stack.
  ProfileData p;
  p.locations.push_back({-1, 1, {{"f", "", 0}}});
  p.samples.push_back({std::vector<uint32_t>(200000, 0), 1, 0, {}, {}});
  std::string svg = WriteFlameGraphSvg(p, "deep");
  ASSERT_TRUE(WellFormed(svg));
  EXPECT_NE(svg.find("<title>[199001 deeper frames not shown] (1 samples, 100.00%)</title>"),
            std::string::npos);
  EXPECT_EQ(Frames(svg).size(), 1001u);  // "all" + 1000 levels
}

TEST(FlameGraphSvg, EmptyProfileStillValid) {
  std::string svg = WriteFlameGraphSvg(ProfileData{}, "empty");
  ASSERT_TRUE(WellFormed(svg));
  EXPECT_NE(svg.find("No samples"), std::string::npos);
}

}  // namespace
}  // namespace sb::profile
