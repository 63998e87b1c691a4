#include "agent/process_selection.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace sb::agent {
namespace {

namespace fs = std::filesystem;

TEST(ProcessSelectionTest, DefaultWantsEverythingAndDiscovers) {
  auto s = ProcessSelector::Make({});
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->discovers());
  EXPECT_TRUE(s->Wants(static_cast<uint32_t>(getpid())));
  EXPECT_EQ(s->Describe(), "all Go processes");
}

TEST(ProcessSelectionTest, ExeRegexMatchesThePath) {
  SelectionOptions o;
  o.exe_regex = "/demo$";
  auto s = ProcessSelector::Make(o);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->ExeMatches("/work/build/testdata/demo"));
  EXPECT_FALSE(s->ExeMatches("/work/build/testdata/demo2"));
  EXPECT_FALSE(s->Wants(static_cast<uint32_t>(getpid())));  // this test binary
  o.exe_regex = "process_selection_test";
  EXPECT_TRUE(ProcessSelector::Make(o)->Wants(static_cast<uint32_t>(getpid())));
}

TEST(ProcessSelectionTest, PidListDoesNotDiscover) {
  SelectionOptions o;
  o.pids = {42, 43};
  auto s = ProcessSelector::Make(o);
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->discovers());
  EXPECT_TRUE(s->Wants(43));
  EXPECT_FALSE(s->Wants(44));
}

TEST(ProcessSelectionTest, BadOptionsAreOneLineErrors) {
  SelectionOptions o;
  o.exe_regex = "(";
  EXPECT_FALSE(ProcessSelector::Make(o).ok());
  o = {};
  o.cgroup = "/nonexistent/cgroup";
  auto r = ProcessSelector::Make(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("not a cgroup directory"), std::string::npos);
  o = {};
  o.pids = {1};
  o.exe_regex = "x";
  EXPECT_FALSE(ProcessSelector::Make(o).ok());
}

TEST(ProcessSelectionTest, CgroupTreeReadsEveryLevel) {
  // A fake hierarchy: cgroup.procs files at several levels (a real one needs privileges).
  fs::path d = fs::temp_directory_path() / ("sb_cgroup_tree." + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d / "a" / "b");
  fs::create_directories(d / "c");
  std::ofstream(d / "cgroup.procs") << "10\n11\n";
  std::ofstream(d / "a" / "cgroup.procs") << "";
  std::ofstream(d / "a" / "b" / "cgroup.procs") << "12\n";
  std::ofstream(d / "c" / "cgroup.procs") << "13\nbogus\n";
  EXPECT_EQ(PidsInCgroupTree(d.string()), (std::set<uint32_t>{10, 11, 12, 13}));
  EXPECT_EQ(PidsInCgroupTree((d / "a").string()), (std::set<uint32_t>{12}));
  SelectionOptions o;
  o.cgroup = (d / "a").string();
  auto s = ProcessSelector::Make(o);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_TRUE(s->Wants(12));
  EXPECT_FALSE(s->Wants(10));
  fs::remove_all(d);
}

}  // namespace
}  // namespace sb::agent
