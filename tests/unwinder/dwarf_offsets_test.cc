// Runtime struct offsets from DWARF equal the version table on real binaries of every Go
// release the project supports (1.19 installed; 1.21-1.27 fetched by tools/fetch-go.sh from
// Debian into .cache/go), for amd64 and arm64. A release whose layout moved makes this fail.
#include "unwinder/dwarf_offsets.h"

#include <gtest/gtest.h>

#include <cstring>
#include <sstream>
#include <string>

#include "tests/common/shell_util.h"
#include "unwinder/go_offsets_table.h"

namespace sb::unwinder {
namespace {

constexpr char kProgram[] = R"(package main

import "fmt"

func main() {
	done := make(chan int)
	go func() { done <- 1 }()
	fmt.Println(<-done)
}
)";

std::string Describe(const sb_go_offsets& o) {
  std::ostringstream s;
  s << "g.stack " << o.g_stack_lo << "/" << o.g_stack_hi << " g.m " << o.g_m << " g.sched " << o.g_sched
    << " g.atomicstatus " << o.g_atomicstatus << " g.goid " << o.g_goid << " gobuf sp/pc/bp/lr " << o.gobuf_sp
    << "/" << o.gobuf_pc << "/" << o.gobuf_bp << "/" << o.gobuf_lr << " m.g0 " << o.m_g0 << " m.curg "
    << o.m_curg << " m.gsignal " << o.m_gsignal << " m.vdsoSP/PC " << o.m_vdsosp << "/" << o.m_vdsopc;
  return s.str();
}

// Builds the program with GO for GOARCH into dir; returns the binary path or "".
std::string Build(const std::string& go, const std::string& arch, const std::string& dir, const std::string& flags) {
  std::string src = dir + "/main.go";
  FILE* f = fopen(src.c_str(), "w");
  if (!f) return "";
  fputs(kProgram, f);
  fclose(f);
  std::string out = dir + "/prog-" + arch + (flags.empty() ? "" : "-stripped");
  auto r = test::RunCommand("cd " + test::Quote(dir) + " && env GOCACHE=" + test::Quote(SB_TEST_BUILD_DIR "/gocache-" + arch) +
                            " GO111MODULE=off GOFLAGS= GOTOOLCHAIN=local CGO_ENABLED=0 GOARCH=" + arch + " " +
                            test::Quote(go) + " build " + flags + " -o " + test::Quote(out) + " main.go");
  EXPECT_EQ(r.status, 0) << r.out;
  return r.status == 0 ? out : "";
}

void CheckToolchain(const std::string& go, int minor) {
  for (const char* arch : {"amd64", "arm64"}) {
    SCOPED_TRACE(std::string("go1.") + std::to_string(minor) + " " + arch);
    std::string dir = test::MakeTempDir(SB_TEST_BUILD_DIR "/tmp", "dwarf-1." + std::to_string(minor));
    std::string bin = Build(go, arch, dir, "");
    ASSERT_FALSE(bin.empty());
    auto dwarf = GoOffsetsFromDwarf(bin);
    ASSERT_TRUE(dwarf.ok()) << dwarf.error();
    auto table = GoOffsetsForVersion(1, minor);
    ASSERT_TRUE(table);
    EXPECT_EQ(std::memcmp(&*dwarf, &*table, sizeof(sb_go_offsets)), 0)
        << "DWARF: " << Describe(*dwarf) << "\ntable: " << Describe(*table);
    // -w drops DWARF: the error says so (the analysis then falls back to the table).
    std::string stripped = Build(go, arch, dir, "-ldflags=-w");
    ASSERT_FALSE(stripped.empty());
    auto none = GoOffsetsFromDwarf(stripped);
    ASSERT_FALSE(none.ok());
    EXPECT_NE(none.error().find("DWARF"), std::string::npos) << none.error();
  }
}

TEST(DwarfOffsets, Go119MatchesTheTable) { CheckToolchain(SB_GO_EXECUTABLE, 19); }

// Go 1.21 to 1.27 from Debian (bookworm-backports, trixie, forky, sid, experimental).
TEST(DwarfOffsets, Go121To127MatchTheTable) {
  auto fetched = test::RunCommand(test::Quote(SB_SOURCE_DIR "/tools/fetch-go.sh"), /*merge_stderr=*/false);
  ASSERT_EQ(fetched.status, 0) << "tools/fetch-go.sh failed (it needs the Debian mirror): " << fetched.out;
  int seen = 0;
  std::istringstream lines(fetched.out);
  std::string version, root;
  while (lines >> version >> root) {
    int minor = std::stoi(version.substr(version.find('.') + 1));
    CheckToolchain(root + "/bin/go", minor);
    seen++;
  }
  EXPECT_EQ(seen, 7) << "expected Go 1.21 to 1.27: " << fetched.out;
}

TEST(DwarfOffsets, MissingFileIsAnError) {
  auto r = GoOffsetsFromDwarf("/nonexistent/binary");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("/nonexistent/binary"), std::string::npos);
}

}  // namespace
}  // namespace sb::unwinder
