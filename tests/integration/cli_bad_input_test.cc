// Bad input to the real CLI: each case gets one clear line on stderr and a non-zero exit (or,
// where the input is usable, a correct recording with a warning), never a crash or a hang.
// Cases: a pid that does not exist or exits during attach, a non-Go process, a Go process with
// unknown runtime facts, truncated or corrupted cores, a binary replaced on disk after the
// process started, no capability for BPF, output paths that cannot be written.
// Tests that record need root and BPF (label `bpf`) and skip otherwise.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "coredump/zstd_file.h"
#include "tests/integration/cli_runner.h"

namespace sb::itest {
namespace {

const std::string kSwitchback = SB_SWITCHBACK_BIN;
const std::string kWorkloadDir = SB_WORKLOAD_DIR;
const std::string kCoredumpDir = SB_COREDUMP_DIR;

fs::path Dir() { return TestDir(SB_TEST_OUT_DIR); }

std::string Chomp(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Exit code 1, exactly WANT (one line) on stderr, and no output file written.
void ExpectFailure(const RunResult& r, const std::string& want, const fs::path& no_output = {}) {
  EXPECT_FALSE(r.timed_out) << Describe(r);
  EXPECT_EQ(r.exit_code(), 1) << Describe(r);
  EXPECT_EQ(Chomp(r.err), want);
  if (!no_output.empty()) EXPECT_FALSE(fs::exists(no_output)) << "wrote " << no_output << " anyway";
}

std::string Demo() { return (fs::path(kWorkloadDir) / "demo").string(); }

class BpfTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!BpfAvailable(&why)) GTEST_SKIP() << "switchback record needs BPF (root and BTF): " << why;
  }
};

std::string ExeOf(pid_t pid) {
  std::error_code ec;
  return fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec).string();
}

// ---------------------------------------------------------------------------------------------
// Processes

TEST(BadInput, PidThatDoesNotExist) {
  fs::path dir = Dir();
  RunResult r = RunCommand({kSwitchback, "record", "--pid", "999999999", "--duration", "30", "--output",
                            (dir / "x.pb.gz").string()},
                           dir, "record", seconds(30));
  ExpectFailure(r, "switchback record: process 999999999 does not exist", dir / "x.pb.gz");
}

TEST_F(BpfTest, NonGoProcess) {
  fs::path dir = Dir();
  Child sleeper({"/bin/sleep", "30"}, dir / "sleep.stdout", dir / "sleep.stderr");
  ASSERT_TRUE(WaitExec(sleeper.pid(), "/bin/sleep", seconds(30))) << "sleep never started";
  RunResult r = RunCommand({kSwitchback, "record", "--pid", std::to_string(sleeper.pid()), "--duration", "5",
                            "--output", (dir / "x.pb.gz").string()},
                           dir, "record", seconds(30));
  ExpectFailure(r,
                "switchback record: process " + std::to_string(sleeper.pid()) + " (" + ExeOf(sleeper.pid()) +
                    ") is not a Go program (no .gopclntab)",
                dir / "x.pb.gz");
}

// A zombie has no memory and no executable: it has exited, whatever /proc still shows.
TEST(BadInput, ZombieProcess) {
  fs::path dir = Dir();
  pid_t child = fork();
  if (child == 0) _exit(0);
  // Waits for the exit without reaping: a zombie until waitpid below.
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0) << strerror(errno);
  RunResult r = RunCommand({kSwitchback, "record", "--pid", std::to_string(child), "--duration", "5",
                            "--output", (dir / "x.pb.gz").string()},
                           dir, "record", seconds(30));
  int st;
  waitpid(child, &st, 0);
  ExpectFailure(r, "switchback record: process " + std::to_string(child) + " has exited", dir / "x.pb.gz");
}

// The process exits at some point of the attach (the delays cover the checks, the BPF load and
// the first samples): either a clean failure naming it, or a complete recording of what ran.
TEST_F(BpfTest, ProcessExitingDuringAttach) {
  fs::path dir = Dir();
  for (int ms : {20, 80, 200, 500, 1200}) {
    SCOPED_TRACE("workload runs " + std::to_string(ms) + " ms");
    std::string tag = std::to_string(ms);
    Child demo({Demo(), "-mode=spin", "-duration=" + tag + "ms"}, dir / (tag + ".demo.out"),
               dir / (tag + ".demo.err"));
    fs::path out = dir / (tag + ".pb.gz");
    RunResult r = RunCommand({kSwitchback, "record", "--pid", std::to_string(demo.pid()), "--duration", "20",
                              "--output", out.string(), "--quiet"},
                             dir, tag + ".record", seconds(60));
    ASSERT_FALSE(r.timed_out) << Describe(r);
    ASSERT_TRUE(WIFEXITED(r.status)) << Describe(r);
    std::string p = "process " + std::to_string(demo.pid());
    if (r.exit_code() == 0) {
      std::string err;
      EXPECT_TRUE(LoadPprof(out, &err)) << err;
    } else {
      EXPECT_EQ(r.exit_code(), 1);
      std::set<std::string> allowed = {"switchback record: " + p + " does not exist",
                                       "switchback record: " + p + " has exited",
                                       "switchback record: " + p + " exited while switchback was attaching to it"};
      EXPECT_TRUE(allowed.count(Chomp(r.err))) << Describe(r);
      EXPECT_FALSE(fs::exists(out));
    }
  }
}

// A binary whose runtime facts are unknown: stripped (no DWARF) and its version string changed
// to one no table knows. It is still recorded (the pprof is valid, the samples are kept); the
// stats say which facts are missing, and samples that needed them end [stopped: no_offsets].
// (Once offsets come from the runtime's own assembly, the stripped binary has them again: then
// the test checks that the source says so.)
TEST_F(BpfTest, GoProcessWithUnknownRuntimeFacts) {
  fs::path dir = Dir();
  auto bytes = ReadFile((fs::path(kWorkloadDir) / "demo-stripped").string());
  ASSERT_TRUE(bytes.ok()) << bytes.error();
  std::string b = *bytes;
  size_t n = 0;
  for (size_t at = b.find("go1.19"); at != std::string::npos; at = b.find("go1.19", at + 1), n++) b[at + 4] = '8';
  ASSERT_GT(n, 0u) << "no go1.19 version string in demo-stripped";  // go1.19 -> go1.89
  fs::path exe = dir / "demo-go189";
  ASSERT_TRUE(WriteFileAtomic(exe.string(), b).ok());
  fs::permissions(exe, fs::perms::owner_all);
  Child demo({exe.string(), "-mode=spin,alloc", "-duration=0"}, dir / "demo.out", dir / "demo.err");
  ASSERT_TRUE(WaitExec(demo.pid(), exe, seconds(30))) << "the demo never started";
  fs::path out = dir / "x.pb.gz", stats = dir / "stats.json";
  RunResult r = RunCommand({kSwitchback, "record", "--pid", std::to_string(demo.pid()), "--duration", "3",
                            "--frequency", "499", "--output", out.string(), "--stats", stats.string(), "--quiet"},
                           dir, "record", seconds(60));
  ASSERT_TRUE(r.exited_ok()) << Describe(r);
  std::string err;
  auto p = LoadPprof(out, &err);
  ASSERT_TRUE(p) << err;
  EXPECT_GT(p->samples.size(), 0u);
  auto j = nlohmann::json::parse(ReadFile(stats.string()).value());
  ASSERT_EQ(j["processes"].size(), 1u) << j.dump();
  const auto& proc = j["processes"][0];
  EXPECT_EQ(proc["go_version"], "go1.89.8") << proc.dump();
  std::string source = proc.value("offsets_source", "");
  auto missing = proc["missing"].get<std::vector<std::string>>();
  bool no_offsets = std::find(missing.begin(), missing.end(), "runtime struct offsets") != missing.end();
  if (no_offsets) {
    EXPECT_GT(j["stop_reasons"].value("no_offsets", 0), 0) << j["stop_reasons"].dump();
  } else {
    // Offsets from the runtime's own code (the binary is stripped, no table knows go1.89):
    // no field may come from a table.
    EXPECT_NE(source.find("from the runtime's code"), std::string::npos) << proc.dump();
    EXPECT_FALSE(std::regex_search(source, std::regex("[1-9][0-9]* from the [^,;]*table")))
        << "a version table knows go1.89? " << proc.dump();
  }
  EXPECT_GT(proc.value("samples", 0), 0) << proc.dump();
}

// The executable is replaced on disk (a rebuild or an upgrade: new file renamed over the old)
// after the process started. /proc/PID/exe still opens the file the process runs: symbols
// come from it, and a warning says the path now names another file.
TEST_F(BpfTest, BinaryReplacedOnDiskAfterStart) {
  fs::path dir = Dir();
  fs::path exe = dir / "demo";
  fs::copy_file(Demo(), exe);
  Child demo({exe.string(), "-mode=leaf,spin", "-duration=0"}, dir / "demo.out", dir / "demo.err");
  // The process must run the demo before the path names another binary.
  ASSERT_TRUE(WaitExec(demo.pid(), exe, seconds(30))) << "the demo never started";
  fs::copy_file((fs::path(kWorkloadDir) / "democgo").string(), dir / "other");
  fs::rename(dir / "other", exe);  // the path now names another binary (new inode)
  fs::path out = dir / "x.pb.gz", stats = dir / "stats.json";
  RunResult r = RunCommand({kSwitchback, "record", "--pid", std::to_string(demo.pid()), "--duration", "3",
                            "--frequency", "499", "--output", out.string(), "--stats", stats.string(), "--quiet"},
                           dir, "record", seconds(60));
  ASSERT_TRUE(r.exited_ok()) << Describe(r);
  std::string warning = "process " + std::to_string(demo.pid()) + ": " + exe.string() +
                        " was replaced or deleted on disk after the process started; using the running "
                        "executable (/proc/" + std::to_string(demo.pid()) + "/exe)";
  EXPECT_EQ(Chomp(r.err), "switchback: warning: " + warning);
  std::string err;
  auto p = LoadPprof(out, &err);
  ASSERT_TRUE(p) << err;
  std::set<std::string> fns;
  for (const auto& loc : p->locations)
    for (const auto& l : loc.lines) fns.insert(l.function);
  EXPECT_TRUE(fns.count("main.spin")) << "symbols do not come from the running binary";
  EXPECT_TRUE(fns.count("main.leafCaller"));
  EXPECT_FALSE(fns.count("main.cgoCaller")) << "symbols come from the replacement";
  auto j = nlohmann::json::parse(ReadFile(stats.string()).value());
  EXPECT_EQ(j["processes"][0]["warnings"][0], warning) << j.dump();
}

// ---------------------------------------------------------------------------------------------
// Permissions and outputs

// Root without CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN (as in a restricted container): the
// message names what is missing, before anything is recorded.
TEST(BadInput, NoCapabilityForBpf) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to drop capabilities from";
  if (!fs::exists("/usr/sbin/capsh")) GTEST_SKIP() << "capsh (libcap2-bin) is not installed";
  fs::path dir = Dir();
  fs::path out = dir / "x.pb.gz";
  std::string cmd = "exec " + kSwitchback + " record --all --duration 5 --output " + out.string();
  RunResult r = RunCommand({"/usr/sbin/capsh", "--drop=cap_bpf,cap_perfmon,cap_sys_admin", "--", "-c", cmd}, dir,
                           "record", seconds(30));
  ExpectFailure(r,
                "switchback record: cannot load the BPF sampler without CAP_BPF and CAP_PERFMON (or "
                "CAP_SYS_ADMIN): missing CAP_BPF and CAP_PERFMON",
                out);
  // With CAP_BPF kept, only CAP_PERFMON is missing.
  r = RunCommand({"/usr/sbin/capsh", "--drop=cap_perfmon,cap_sys_admin", "--", "-c", cmd}, dir, "record2",
                 seconds(30));
  ExpectFailure(r,
                "switchback record: cannot load the BPF sampler without CAP_BPF and CAP_PERFMON (or "
                "CAP_SYS_ADMIN): missing CAP_PERFMON",
                out);
}

// Every output flag is checked before recording: nothing is sampled for a file that cannot be
// written. (As root, a directory's mode does not stop writes; missing directories, a
// directory in the file's place and file systems that take no files do.)
TEST(BadInput, UnwritableOutputsFailBeforeRecording) {
  fs::path dir = Dir();
  fs::create_directories(dir / "adir");
  struct Case {
    std::string flag, path, want;
  };
  std::vector<Case> cases = {
      {"--output", "/nonexistent-dir/x.pb.gz", "cannot write /nonexistent-dir/x.pb.gz: no directory /nonexistent-dir"},
      {"--output", (dir / "adir").string(), "cannot write " + (dir / "adir").string() + ": it is a directory"},
      {"--folded", "/nonexistent-dir/x.folded", "cannot write /nonexistent-dir/x.folded: no directory /nonexistent-dir"},
      {"--flamegraph", "/nonexistent-dir/x.svg", "cannot write /nonexistent-dir/x.svg: no directory /nonexistent-dir"},
      {"--stats", "/sys/x.json", "cannot write /sys/x.json: Permission denied"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.flag + " " + c.path);
    std::vector<std::string> argv = {kSwitchback, "record", "--all", "--duration", "30"};
    if (c.flag != "--output") argv.insert(argv.end(), {"--output", (dir / "ok.pb.gz").string()});
    argv.insert(argv.end(), {c.flag, c.path});
    RunResult r = RunCommand(argv, dir, "record", seconds(30));
    ExpectFailure(r, "switchback record: " + c.want, dir / "ok.pb.gz");
  }
  // coredump new checks its case directory before gcore runs.
  RunResult r = RunCommand({kSwitchback, "coredump", "new", "--pid", std::to_string(getpid()), "--name", "x",
                            "--dir", "/sys/cases"},
                           dir, "coredump", seconds(30));
  ExpectFailure(r, "switchback coredump new: cannot write cases to /sys/cases: Operation not permitted");
}

// ---------------------------------------------------------------------------------------------
// Cores

// A real core (from the coredump cases) cut short or with damaged headers: `coredump analyze`
// names the problem in one line.
TEST(BadInput, TruncatedAndCorruptedCores) {
  fs::path dir = Dir();
  auto read_blob = [](const std::string& rel) {
    auto z = ReadFile(kCoredumpDir + "/" + rel);
    EXPECT_TRUE(z.ok()) << z.error();
    auto d = coredump::ZstdDecompress(z.ok() ? *z : "");
    EXPECT_TRUE(d.ok()) << d.error();
    return d.ok() ? *d : std::string();
  };
  auto cs = nlohmann::json::parse(ReadFile(kCoredumpDir + "/amd64-go1.19.8-idle.json").value());
  std::string core = read_blob(cs["core"]);
  std::string exe = read_blob(cs["files"][0]["file"]);
  ASSERT_GT(core.size(), 4096u);
  fs::path exe_path = dir / "corecases";
  ASSERT_TRUE(WriteFileAtomic(exe_path.string(), exe).ok());
  std::string binary_arg = exe_path.string() + "=" + cs["files"][0]["path"].get<std::string>();

  struct Case {
    std::string name, bytes, want;
  };
  std::string bad_phoff = core;
  for (int i = 32; i < 39; i++) bad_phoff[i] = '\x7f';  // e_phoff far past the end
  std::string not_core = core;
  not_core[16] = 2;  // e_type ET_EXEC
  std::vector<Case> cases = {
      {"empty", "", "not a core file (no ELF magic)"},
      {"ident_only", core.substr(0, 10), "truncated core file (ELF header)"},
      {"header_only", core.substr(0, 64), "truncated core file (program headers past the end)"},
      {"bad_phoff", bad_phoff, "truncated core file (program headers past the end)"},
      {"not_core", not_core, "not a core file (ELF type 2, want ET_CORE)"},
      {"half", core.substr(0, core.size() / 2), ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    fs::path p = dir / (c.name + ".core");
    ASSERT_TRUE(WriteFileAtomic(p.string(), c.bytes).ok());
    RunResult r = RunCommand({kSwitchback, "coredump", "analyze", "--core", p.string(), "--binary", binary_arg}, dir,
                             c.name, seconds(60));
    EXPECT_FALSE(r.timed_out) << Describe(r);
    EXPECT_EQ(r.exit_code(), 1) << Describe(r);
    std::string err = Chomp(r.err);
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 0) << err;
    std::string prefix = "switchback coredump analyze: " + p.string() + ": ";
    if (c.want.empty()) {  // cut inside the memory: names the segment and sizes
      EXPECT_EQ(err.rfind(prefix + "truncated core file: PT_LOAD at ", 0), 0u) << err;
    } else {
      EXPECT_EQ(err, prefix + c.want);
    }
  }
}

}  // namespace
}  // namespace sb::itest
