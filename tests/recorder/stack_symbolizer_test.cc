// Symbolizing raw stacks of a real running Go process (no BPF needed: the stacks are made
// from the binary's own function table, the process supplies maps and load bias).
#include "recorder/stack_symbolizer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

namespace sb::recorder {
namespace {

class LiveDemo {
 public:
  explicit LiveDemo(const std::string& binary) {
    pid_ = fork();
    if (pid_ == 0) {
      execl(binary.c_str(), binary.c_str(), "-mode=spin", "-duration=20s", nullptr);
      _exit(127);
    }
    // Tracked as the demo: wait for the exec (fork returns before it), then let the runtime map
    // itself.
    std::error_code ec;
    for (int i = 0; i < 3000 && !std::filesystem::equivalent("/proc/" + std::to_string(pid_) + "/exe", binary, ec);
         i++)
      usleep(10 * 1000);
    usleep(300 * 1000);
  }
  ~LiveDemo() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  uint32_t pid() const { return static_cast<uint32_t>(pid_); }

 private:
  pid_t pid_;
};

void CheckDemoStacks(const std::string& name) {
  LiveDemo demo(std::string(SB_TESTDATA_BIN) + "/" + name);
  sym::BinaryCache cache;
  ProcessTracker tracker(&cache, nullptr);
  auto p = tracker.Track(demo.pid(), true);
  ASSERT_TRUE(p.ok()) << p.error();
  const sym::GoPclntab* go = (*p)->binary->go();
  ASSERT_NE(go, nullptr);
  uint64_t bias = (*p)->bias;
  auto leaf = go->FindFuncByName("main.leafAdd");
  auto caller = go->FindFuncByName("main.leafCaller");
  auto goexit = go->FindFuncByName("runtime.goexit");
  ASSERT_TRUE(leaf && caller && goexit);

  SampleAggregator agg;
  sb_sample s{};
  s.pid = demo.pid();
  s.tid = demo.pid() + 1;
  s.flags = SB_SAMPLE_HAS_GOID;
  s.goid = 7;
  s.stop_reason = SB_STOP_ROOT;
  std::strcpy(s.comm, "demo");
  s.frames[0] = leaf->entry + bias;           // exact pc
  s.frames[1] = caller->entry + bias + 0x20;  // return address
  s.frames[2] = goexit->entry + bias + 1;
  s.nframes = 3;
  s.exact[0] = 1;
  agg.Add(s);
  agg.Add(s);
  sb_sample stopped = s;
  stopped.stop_reason = SB_STOP_STALE_GOROUTINE;
  stopped.nframes = 2;
  agg.Add(stopped);
  sb_sample exited = stopped;  // whole, though not at a root: no stop marker
  exited.stop_reason = SB_STOP_GOROUTINE_EXITED;
  for (int i = 0; i < 4; i++) agg.Add(exited);

  SymbolizeOptions opts;
  opts.period_nanos = 1000000;
  auto d = SymbolizeStacks(agg, tracker, opts);
  ASSERT_EQ(d.samples.size(), 3u);
  bool saw_whole = false, saw_stopped = false, saw_exited = false;
  for (const auto& smp : d.samples) {
    std::vector<std::string> names;
    for (uint32_t li : smp.locations) names.push_back(d.locations[li].lines.back().function);
    EXPECT_EQ(smp.num_labels.at("pid"), demo.pid());
    EXPECT_EQ(smp.num_labels.at("goroutine"), 7);
    EXPECT_EQ(smp.labels.at("thread"), "demo");
    if (smp.count == 2) {
      saw_whole = true;
      EXPECT_EQ(names, (std::vector<std::string>{"main.leafAdd", "main.leafCaller", "runtime.goexit"}));
      EXPECT_EQ(smp.nanos, 2000000);
      const auto& loc = d.locations[smp.locations[0]];
      ASSERT_GE(loc.mapping_index, 0);
      EXPECT_NE(d.mappings[loc.mapping_index].file.find(name), std::string::npos);
      EXPECT_NE(loc.lines[0].file.find("testdata/workloads/demo/"), std::string::npos) << loc.lines[0].file;
      EXPECT_GT(loc.lines[0].line, 0);
    } else if (smp.count == 4) {
      saw_exited = true;
      EXPECT_EQ(names, (std::vector<std::string>{"main.leafAdd", "main.leafCaller"}));
    } else {
      saw_stopped = true;
      EXPECT_EQ(names, (std::vector<std::string>{"main.leafAdd", "main.leafCaller",
                                                 "[stopped: stale_goroutine]"}));
    }
  }
  EXPECT_TRUE(saw_whole && saw_stopped && saw_exited);
}

TEST(StackSymbolizer, NonPieExecutable) { CheckDemoStacks("demo"); }
TEST(StackSymbolizer, PieExecutableUsesTheLoadBias) { CheckDemoStacks("demo-pie"); }
TEST(StackSymbolizer, StrippedExecutable) { CheckDemoStacks("demo-stripped"); }

// Kernel frames go above (leaf side of) the user stack, in the mapping [kernel.kallsyms], named
// from the kernel symbols (a return address looked up at the call); the executable's mapping
// stays the profile's first; a sample in the kernel without its kernel stack is not whole and
// says so with a leaf-side pseudo-frame.
TEST(StackSymbolizer, KernelFramesAboveTheUserStack) {
  LiveDemo demo(std::string(SB_TESTDATA_BIN) + "/demo");
  sym::BinaryCache cache;
  ProcessTracker tracker(&cache, nullptr);
  auto p = tracker.Track(demo.pid(), true);
  ASSERT_TRUE(p.ok()) << p.error();
  auto leaf = (*p)->binary->go()->FindFuncByName("main.leafAdd");
  auto goexit = (*p)->binary->go()->FindFuncByName("runtime.goexit");
  ASSERT_TRUE(leaf && goexit);
  auto ks = sym::KernelSymbols::Parse(
      "ffffffff81200000 T vfs_write\nffffffff81200400 T ksys_write\nffffffff81300000 T do_syscall_64\n");
  ASSERT_TRUE(ks.ok()) << ks.error();

  sb_cpu_sample rec{};
  sb_sample& s = rec.s;
  s.pid = demo.pid();
  s.tid = demo.pid();
  s.stop_reason = SB_STOP_ROOT;
  s.frames[0] = leaf->entry + (*p)->bias;
  s.frames[1] = goexit->entry + (*p)->bias + 1;
  s.nframes = 2;
  s.exact[0] = 1;
  rec.kernel.status = SB_KSTACK_OK;
  rec.kernel.frames[0] = 0xffffffff81200010;  // the interrupted pc, in vfs_write
  rec.kernel.frames[1] = 0xffffffff81200400;  // a return address: the call before it is in vfs_write
  rec.kernel.frames[2] = 0xffffffff81300020;
  rec.kernel.nframes = 3;
  EXPECT_TRUE(IsWhole(rec));
  sb_cpu_sample missing = rec;
  missing.kernel.status = SB_KSTACK_ERROR;
  missing.kernel.nframes = 0;
  EXPECT_FALSE(IsWhole(missing));
  EXPECT_FALSE(IsWhole(SampleAggregator::KeyOf(missing)));
  sb_cpu_sample user = rec;  // interrupted user code: no kernel stack, whole
  user.kernel.status = SB_KSTACK_USER;
  user.kernel.nframes = 0;
  EXPECT_TRUE(IsWhole(user));

  SampleAggregator agg;
  agg.Add(rec);
  agg.Add(missing);
  agg.Add(missing);
  agg.Add(user);
  agg.Add(user);
  agg.Add(user);
  SymbolizeOptions so;
  so.period_nanos = 1000000;
  so.kernel = &*ks;
  auto d = SymbolizeStacks(agg, tracker, so);
  ASSERT_EQ(d.samples.size(), 3u);
  ASSERT_FALSE(d.mappings.empty());
  EXPECT_NE(d.mappings.front().file, kKernelMappingName) << "the executable's mapping comes first";
  for (const auto& smp : d.samples) {
    std::vector<std::string> names, files;
    for (uint32_t li : smp.locations) {
      const auto& loc = d.locations[li];
      names.push_back(loc.lines.back().function);
      files.push_back(loc.mapping_index >= 0 ? d.mappings[loc.mapping_index].file : "");
    }
    if (smp.count == 1) {
      EXPECT_EQ(names, (std::vector<std::string>{"vfs_write", "vfs_write", "do_syscall_64", "main.leafAdd",
                                                 "runtime.goexit"}));
      EXPECT_EQ(files[0], kKernelMappingName);
      EXPECT_EQ(files[2], kKernelMappingName);
      EXPECT_NE(files[3], kKernelMappingName);
    } else if (smp.count == 2) {
      EXPECT_EQ(names, (std::vector<std::string>{kKernelStackMissing, "main.leafAdd", "runtime.goexit"}));
      EXPECT_EQ(files[0], kKernelMappingName);
    } else {
      EXPECT_EQ(names, (std::vector<std::string>{"main.leafAdd", "runtime.goexit"}));
    }
  }
}

TEST(StackSymbolizer, CrossedSwitchesLabel) {
  EXPECT_EQ(CrossedSwitches(0), "");
  EXPECT_EQ(CrossedSwitches((1u << SB_CROSS_LEAF) | (1u << SB_CROSS_SYSTEMSTACK)), "leaf,systemstack");
  EXPECT_EQ(CrossedSwitches(1u << SB_CROSS_ASMCGOCALL), "asmcgocall");
}

TEST(StackSymbolizer, StopFrameNames) {
  EXPECT_EQ(StopFrameName(SB_STOP_BAD_FP), "[stopped: bad_fp]");
  EXPECT_EQ(StopFrameName(SB_STOP_MAX_FRAMES), "[stopped: max_frames]");
}

}  // namespace
}  // namespace sb::recorder
