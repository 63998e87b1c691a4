#include "serve/index_page.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace sb::serve {
namespace {

std::vector<ProcessInfo> Procs() {
  ProcessInfo p;
  p.pid = 77;
  p.exe = "/srv/<evil>&\"name'";
  p.go_version = "go1.22.1";
  p.facts_source = "code";
  p.samples = 200;
  p.whole_samples = 150;
  p.latest_window_file = "/w/77.pb.gz";
  p.labels = {{"k", "<v>"}};
  return {p};
}

TEST(IndexPageTest, HtmlEscapesEverything) {
  std::string h = RenderIndexHtml(Procs());
  EXPECT_NE(h.find("<td>/srv/&lt;evil&gt;&amp;&quot;name&#39;</td>"), std::string::npos) << h;
  EXPECT_NE(h.find("<td>75.0%</td>"), std::string::npos) << h;
  EXPECT_NE(h.find("k=&lt;v&gt;"), std::string::npos);
  EXPECT_NE(h.find("href='profile?pid=77&amp;seconds=30'"), std::string::npos);
  EXPECT_EQ(h.find("<evil>"), std::string::npos);
}

TEST(IndexPageTest, JsonHasEveryField) {
  auto j = nlohmann::json::parse(RenderIndexJson(Procs()));
  ASSERT_EQ(j["processes"].size(), 1u);
  auto p = j["processes"][0];
  EXPECT_EQ(p["pid"], 77);
  EXPECT_EQ(p["exe"], "/srv/<evil>&\"name'");
  EXPECT_EQ(p["go_version"], "go1.22.1");
  EXPECT_EQ(p["facts_source"], "code");
  EXPECT_EQ(p["samples"], 200);
  EXPECT_EQ(p["whole_samples"], 150);
  EXPECT_DOUBLE_EQ(p["whole_share"].get<double>(), 0.75);
  EXPECT_EQ(p["latest_window_file"], "/w/77.pb.gz");
  EXPECT_EQ(p["labels"]["k"], "<v>");
  EXPECT_EQ(p["exited"], false);
}

TEST(IndexPageTest, InvalidUtf8DoesNotThrow) {
  auto procs = Procs();
  procs[0].exe = "/bad/\xff\xfe";
  nlohmann::json j;
  EXPECT_NO_THROW(j = nlohmann::json::parse(RenderIndexJson(procs)));
  EXPECT_EQ(j["processes"].size(), 1u);
}

}  // namespace
}  // namespace sb::serve
