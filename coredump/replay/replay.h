// Replays a core through the same Go analysis, the same unwind core (host build) and the same
// symbolizer as the live sampler, and formats each thread's stack as strings.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/result.h"
#include "ebpf/unwind/unwind_types.h"

namespace sb::coredump {

struct ReplayInput {
  std::string core_path;
  // Files the process had mapped: path as the process saw it -> local copy. The executable is
  // required; libraries are optional (their frames are then named by mapping and offset).
  std::map<std::string, std::string> files;
  std::string executable;  // path as the process saw it (a key of `files`)
  std::set<uint64_t> fault_addresses;
  bool record_reads = false;
  // Compare the build id of the executable the core mapped (its first page, in the core) with
  // the local executable's; a mismatch is an error. Cases skip it (their files are the ones
  // captured); `new` and `analyze` on a user's core do it.
  bool check_build_id = false;
};

struct ReplayedThread {
  uint32_t lwp = 0;
  std::string stop;
  std::vector<std::string> crossed;
  std::vector<std::string> frames;
  std::set<uint64_t> faults_hit;
  std::vector<uint64_t> reads;  // addresses read, in order (ReplayInput::record_reads)
  uint64_t goid = 0;
  // The pprof labels of the goroutine the stack is labelled with (the crossed one under a
  // switch), read by the sampler's goroutine_labels.h: "key=value" sorted, and how they were
  // read ("ok", "none", "off" with no goroutine, ...).
  std::vector<std::string> labels;
  std::string labels_status;
};

struct ReplayResult {
  std::string arch;
  std::string go_version;
  std::vector<ReplayedThread> threads;
  sb_counters counters{};
  std::string build_id;  // check_build_id: "matches (Go build id X)" or why it was not compared
};

Result<ReplayResult> Replay(const ReplayInput& in);

}  // namespace sb::coredump
