// Real modern binaries: lefthook 2.2.2 (Go 1.27.0, no DWARF, no symbol table, pclntab textStart
// 0, gofunc moved). The oracle is the Go 1.27 runtime itself: a SIGQUIT traceback with
// GOTRACEBACK=system prints every frame's pc, its offset from the function entry and its
// file:line, with inlined frames expanded.
#include <gtest/gtest.h>
#include <dirent.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "symbolizer/binary.h"
#include "tests/symbolizer/test_util.h"

namespace sb::sym {
namespace {

using test::Quote;
using test::RunCommand;

std::string Dir() {
  static std::string dir, error;
  static bool done = false;
  if (!done) {
    dir = test::LefthookDir(&error);
    done = true;
  }
  return dir;
}

std::shared_ptr<Binary> LoadLefthook(const std::string& arch) {
  std::string dir = Dir();
  EXPECT_FALSE(dir.empty()) << "tools/fetch-lefthook.sh failed (needs npm and the registry)";
  if (dir.empty()) return nullptr;
  auto b = Binary::Load(dir + "/lefthook-linux-" + arch);
  EXPECT_TRUE(b.ok()) << b.error();
  return b.ok() ? *b : nullptr;
}

void CheckStaticFacts(const Binary& b) {
  EXPECT_TRUE(b.elf().Symbols().empty());  // stripped: everything comes from the pclntab
  ASSERT_NE(b.go(), nullptr);
  const GoPclntab& go = *b.go();
  EXPECT_EQ(go.format(), PclntabFormat::kGo120);  // 0xfffffff1 is still the 1.27 magic
  EXPECT_GT(go.num_funcs(), 5000u);
  EXPECT_LT(go.num_funcs(), 100000u);
  // The header's textStart is 0 since Go 1.26: the text start came from the moduledata.
  EXPECT_EQ(go.text_start(), b.elf().FindSection(".text")->addr);
  for (const char* name : {"runtime.goexit", "main.main", "runtime.mstart", "runtime.main",
                           "runtime.systemstack", "runtime.mcall"}) {
    auto f = go.FindFuncByName(name);
    ASSERT_TRUE(f.has_value()) << name;
    EXPECT_EQ(f->name, name);
    auto again = go.FindFunc(f->entry + 1);
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(again->entry, f->entry);
    EXPECT_EQ(again->name, name);
  }
  EXPECT_NE(go.FindFuncByName("runtime.goexit")->flag & kFuncFlagTopFrame, 0);
  // This binary does carry a build info section.
  ASSERT_NE(b.build_info(), nullptr);
  EXPECT_EQ(b.build_info()->go_version.rfind("go1.27", 0), 0u) << b.build_info()->go_version;
  EXPECT_EQ(b.build_info()->major, 1);
  EXPECT_EQ(b.build_info()->minor, 27);
  EXPECT_EQ(b.build_info()->module_path, "github.com/evilmartians/lefthook/v2");
  EXPECT_FALSE(b.build_id().empty());
}

TEST(LefthookTest, X64StaticFacts) {
  auto b = LoadLefthook("x64");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->elf().arch(), Arch::kAmd64);
  EXPECT_EQ(b->go()->pc_quantum(), 1);
  CheckStaticFacts(*b);
}

TEST(LefthookTest, Arm64StaticFacts) {
  auto b = LoadLefthook("arm64");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->elf().arch(), Arch::kArm64);
  EXPECT_EQ(b->go()->pc_quantum(), 4);
  CheckStaticFacts(*b);
  // Every arm64 function starts on a 4-byte boundary and functions do not overlap.
  const GoPclntab& go = *b->go();
  uint64_t prev_end = 0;
  for (size_t i = 0; i < go.num_funcs(); i++) {
    auto f = go.FuncAt(i);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(f->entry % 4, 0u) << f->name;
    EXPECT_GE(f->entry, prev_end) << f->name;
    prev_end = f->end;
  }
  // main.main inlines cmd.Lefthook: the inline tree (funcdata at the 1.27 gofunc) is decoded.
  auto m = go.FindFuncByName("main.main");
  ASSERT_TRUE(m.has_value());
  bool saw_inlined = false;
  for (uint64_t pc = m->entry; pc < m->end; pc += 4) {
    auto frames = go.Symbolize(pc);
    ASSERT_FALSE(frames.empty());
    EXPECT_EQ(frames.back().function, "main.main");
    if (frames.size() > 1) {
      saw_inlined = true;
      EXPECT_EQ(frames[0].function, "github.com/evilmartians/lefthook/v2/cmd.Lefthook");
      EXPECT_EQ(frames[0].file, "github.com/evilmartians/lefthook/v2/cmd/lefthook.go");
    }
  }
  EXPECT_TRUE(saw_inlined);
}

struct TraceFrame {
  std::string function, fileline;
  uint64_t pc = 0, off = 0;
  bool physical = false;  // has pc= (inlined frames print only name(...) and file:line)
  bool first_in_goroutine = false;
};

// Parses a GOTRACEBACK=system dump: "name(args)" then "\tfile:line [+0xOFF] fp=.. sp=.. pc=..".
std::vector<TraceFrame> ParseTraceback(const std::string& text) {
  std::vector<TraceFrame> out;
  std::istringstream in(text);
  std::string line, pending;
  bool new_goroutine = false;
  while (std::getline(in, line)) {
    if (line.rfind("goroutine ", 0) == 0) {
      new_goroutine = true;
      pending.clear();
      continue;
    }
    if (!line.empty() && line[0] == '\t' && !pending.empty()) {
      TraceFrame f;
      f.function = pending;
      pending.clear();
      std::istringstream ls(line.substr(1));
      ls >> f.fileline;
      std::string tok;
      while (ls >> tok) {
        if (tok.rfind("+0x", 0) == 0) f.off = std::stoull(tok.substr(3), nullptr, 16);
        if (tok.rfind("pc=0x", 0) == 0) {
          f.pc = std::stoull(tok.substr(5), nullptr, 16);
          f.physical = true;
        }
      }
      f.first_in_goroutine = new_goroutine;
      new_goroutine = false;
      out.push_back(f);
      continue;
    }
    pending.clear();
    if (line.empty() || line.back() != ')' || line.rfind("created by", 0) == 0) continue;
    // Strip the argument list: the last '(' that balances the final ')'.
    int depth = 0;
    for (size_t i = line.size(); i-- > 0;) {
      if (line[i] == ')') depth++;
      if (line[i] == '(' && --depth == 0) {
        pending = line.substr(0, i);
        break;
      }
    }
  }
  return out;
}

// Children of every thread of PID (Go forks from whichever thread runs the goroutine).
std::vector<pid_t> ChildrenOf(pid_t pid) {
  std::vector<pid_t> out;
  std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(task_dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(task_dir + "/" + e->d_name + "/children");
    pid_t c;
    while (in >> c) out.push_back(c);
  }
  closedir(d);
  return out;
}

// Starts `lefthook run pre-commit --force` in WORK with SIGQUIT at its default action (a shell
// would start a background job with SIGQUIT ignored, and Go keeps an inherited SIG_IGN), waits
// until the hook's child runs, sends SIGQUIT and returns the traceback.
std::string RunLefthookAndQuit(const std::string& bin, const std::string& work) {
  std::string out_path = work + "/out.txt";
  std::string cmd = "cd " + Quote(work) + " && exec env GOTRACEBACK=system " + Quote(bin) +
                    " run pre-commit --force > " + Quote(out_path) + " 2>&1";
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t def;
  sigemptyset(&def);
  sigaddset(&def, SIGQUIT);
  sigaddset(&def, SIGINT);
  posix_spawnattr_setsigdefault(&attr, &def);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  const char* argv[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
  pid_t pid;
  int rc = posix_spawn(&pid, "/bin/sh", nullptr, &attr, const_cast<char**>(argv), environ);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return "posix_spawn failed";
  std::vector<pid_t> kids;
  for (int i = 0; i < 100 && kids.empty(); i++) {
    usleep(100 * 1000);
    kids = ChildrenOf(pid);
  }
  usleep(500 * 1000);  // let every goroutine reach its blocking point
  kill(pid, SIGQUIT);
  int status;
  waitpid(pid, &status, 0);
  // The hook's shell and its sleep are ours too: lefthook gives them their own process group.
  for (pid_t k : kids) {
    kill(-k, SIGKILL);
    kill(k, SIGKILL);
  }
  std::ifstream in(out_path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(LefthookTest, X64MatchesRuntimeTraceback) {
  std::string dir = Dir();
  ASSERT_FALSE(dir.empty());
  std::string bin = dir + "/lefthook-linux-x64";
  auto b = LoadLefthook("x64");
  ASSERT_NE(b, nullptr);

  // A git repo whose pre-commit hook sleeps: lefthook waits for it, and SIGQUIT makes the Go
  // runtime print all goroutines (and, with GOTRACEBACK=system, the system ones and pc=).
  std::string work = test::MakeTempDir("lefthook");
  std::ofstream(work + "/lefthook.yml")
      << "pre-commit:\n  commands:\n    wait:\n      run: sleep 30\n      always_run: true\n";
  ASSERT_EQ(RunCommand("cd " + Quote(work) + " && git init -q .").status, 0);
  std::string out = RunLefthookAndQuit(bin, work);
  auto frames = ParseTraceback(out);
  ASSERT_GT(frames.size(), 30u) << out;

  int checked = 0, inlined_checked = 0;
  std::vector<TraceFrame> group;  // inlined frames waiting for their physical frame
  for (const TraceFrame& f : frames) {
    group.push_back(f);
    if (!f.physical) continue;
    std::vector<TraceFrame> want = std::move(group);
    group.clear();
    // The runtime looks up pc-1 for return addresses (every frame except the first of a
    // signalled goroutine, which it looks up at pc); the first frame may be either.
    std::vector<uint64_t> tries = {f.pc > 0 && f.off > 0 ? f.pc - 1 : f.pc};
    if (want.front().first_in_goroutine) tries.push_back(f.pc);
    bool matched = false;
    std::string diag;
    for (uint64_t sym_pc : tries) {
      auto fn = b->go()->FindFunc(sym_pc);
      if (!fn) continue;
      auto got = b->Symbolize(sym_pc);
      auto fl = b->go()->FileLine(sym_pc);
      bool ok = fn->entry == f.pc - f.off && fn->name == f.function && got.size() == want.size();
      for (size_t i = 0; ok && i < got.size(); i++) {
        ok = got[i].function == want[i].function &&
             got[i].file + ":" + std::to_string(got[i].line) == want[i].fileline &&
             got[i].inlined == !want[i].physical;
      }
      ok = ok && fl && fl->function == f.function &&
           fl->file + ":" + std::to_string(fl->line) == want.front().fileline;
      if (ok) {
        matched = true;
        break;
      }
      diag += "pc " + std::to_string(sym_pc) + ": got entry " + std::to_string(fn->entry) + " " +
              std::string(fn->name) + " frames:";
      for (const auto& g : got) diag += " " + g.function + "@" + g.file + ":" + std::to_string(g.line);
      diag += "\n";
    }
    EXPECT_TRUE(matched) << "traceback frame " << f.function << " " << f.fileline << " pc=0x"
                         << std::hex << f.pc << " +0x" << f.off << "\n" << diag;
    checked++;
    if (want.size() > 1) inlined_checked++;
  }
  std::cout << "checked " << checked << " physical frames (" << inlined_checked
            << " with inlined frames) against the Go 1.27 runtime's traceback\n";
  EXPECT_GE(checked, 30) << out;
  EXPECT_GE(inlined_checked, 3) << out;
}

}  // namespace
}  // namespace sb::sym
