// trace --stacks: a process that exited before its first call path was read is symbolized from
// the load bias its paths carry (exitprobe/process_image.h): its executable's segments placed at
// that bias give every Go frame its function, as /proc/PID/maps would have.
#include <gtest/gtest.h>

#include <string>

#include "exitprobe/process_image.h"
#include "exitprobe/trace_plan.h"
#include "recorder/process_tracker.h"
#include "recorder/stack_symbolizer.h"
#include "symbolizer/binary.h"
#include "unwinder/process_maps.h"

namespace sb::exitprobe {
namespace {

const std::string kWorkloads = SB_WORKLOAD_DIR;

TEST(ProcessFromLoadBias, PlacesThePieExecutableAtItsBias) {
  std::string path = kWorkloads + "/traced-pie";
  auto bin = sym::Binary::Load(path);
  ASSERT_TRUE(bin.ok()) << bin.error();
  PlanOptions po;
  po.patterns = {"^main\\.(shared|fastCaller)$"};
  auto plan = BuildTracePlan(**bin, path, po);
  ASSERT_TRUE(plan.ok()) << plan.error();
  ASSERT_EQ(plan->funcs.size(), 2u);
  const uint64_t bias = 0x55d1c2e3f000;
  recorder::TrackedProcess p = ProcessFromLoadBias(4242, path, *bin, nullptr, bias);
  EXPECT_TRUE(p.exited);
  for (const auto& f : plan->funcs) {
    uint64_t pc = f.start + bias + 1;
    const unwinder::MemoryMapping* m = unwinder::FindMapping(p.maps, pc);
    ASSERT_NE(m, nullptr) << f.name;
    EXPECT_TRUE(m->executable()) << f.name;
    EXPECT_EQ(unwinder::RuntimeToLinkAddress((*bin)->elf(), *m, pc), f.start + 1) << f.name;
  }
  // Through the symbolizer trace uses: a path fastCaller <- shared, as return addresses.
  sym::BinaryCache cache;
  recorder::ProcessTracker tracker(&cache, nullptr);
  tracker.Adopt(std::move(p));
  recorder::StackKey key;
  key.pid = 4242;
  const FuncPlan* shared = plan->funcs[0].name == "main.shared" ? &plan->funcs[0] : &plan->funcs[1];
  const FuncPlan* caller = shared == &plan->funcs[0] ? &plan->funcs[1] : &plan->funcs[0];
  key.frames = {shared->start + bias + 2, caller->start + bias + 8};
  key.exact[0] = 1;  // frame 0 is the RET's exact pc
  key.stop_reason = SB_STOP_ROOT;
  recorder::SampleAggregator agg;
  agg.AddKey(key, 1);
  profile::ProfileData d = recorder::SymbolizeStacks(agg, tracker, {});
  ASSERT_EQ(d.samples.size(), 1u);
  ASSERT_EQ(d.samples[0].locations.size(), 2u);
  EXPECT_EQ(d.locations[d.samples[0].locations[0]].lines.at(0).function, "main.shared");
  EXPECT_EQ(d.locations[d.samples[0].locations[1]].lines.at(0).function, "main.fastCaller");
}

}  // namespace
}  // namespace sb::exitprobe
