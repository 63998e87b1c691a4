// The processes a recording follows: their executable's Go facts (analysed once per binary),
// load bias and memory maps. Kept after a process exits, so its samples can still be
// symbolized.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "symbolizer/binary.h"
#include "unwinder/go_binary_facts.h"
#include "unwinder/process_maps.h"

namespace sb::unwinder {
class BpfSampler;
}

namespace sb::recorder {

struct TrackedProcess {
  uint32_t pid = 0;
  std::string exe;   // path of the executable as the process sees it
  std::string comm;
  std::shared_ptr<sym::Binary> binary;
  std::shared_ptr<const unwinder::GoBinaryFacts> facts;  // null for non-Go processes
  uint64_t bias = 0;
  std::vector<unwinder::MemoryMapping> maps;
  uint64_t start_time = 0;  // ProcessStartTime when tracked (0: not known, as for a core)
  bool exited = false;
  // The process ran exec: the facts above describe its old program, which is what exited (the
  // pid goes on as a new process, followed anew once this one is forgotten).
  bool ran_exec = false;
  std::vector<std::string> warnings;  // one line each, e.g. the executable changed on disk
};

class ProcessTracker {
 public:
  // sampler may be null (analysis only, as in tests and `inspect`).
  ProcessTracker(sym::BinaryCache* cache, unwinder::BpfSampler* sampler)
      : cache_(cache), sampler_(sampler) {}

  // Analyses PID and hands it to the sampler. Fails with a one-line reason for a missing
  // process, one that exits meanwhile, one we may not read or, when require_go, a process
  // that is not a Go program. An executable replaced or deleted on disk since the process
  // started is read through /proc/PID/exe (the file the process runs) and noted in warnings.
  Result<TrackedProcess*> Track(uint32_t pid, bool require_go);
  TrackedProcess* Find(uint32_t pid);
  // Adds a process described elsewhere (a core file, a test); not handed to the sampler.
  TrackedProcess* Adopt(TrackedProcess p);
  // Re-reads /proc/PID/maps (for libraries loaded after the start). False if it is gone.
  bool RefreshMaps(uint32_t pid);
  // Marks processes that no longer exist (or whose pid is another process's now: another
  // start time), or ran exec; returns how many are still alive.
  size_t CheckAlive();
  // PID ran exec (the sampler's report): its program is gone, as if it exited, at the next
  // CheckAlive. False if PID is not followed.
  bool NoteExec(uint32_t pid);
  // Drops PID (removing it from the sampler if it still runs): a long-running session forgets
  // processes whose samples it has written, so processes coming and going do not make it grow.
  void Forget(uint32_t pid);
  const std::map<uint32_t, TrackedProcess>& processes() const { return procs_; }

  // Loads the file behind mapping M the way the process saw it: through /proc/PID/root while
  // it is alive, or through /proc/PID/map_files when the file on disk is no longer the one
  // mapped (another inode: replaced by a package upgrade, say).
  Result<std::shared_ptr<sym::Binary>> LoadFile(const TrackedProcess& p, const unwinder::MemoryMapping& m);
  sym::BinaryCache* cache() { return cache_; }

 private:
  Result<std::shared_ptr<const unwinder::GoBinaryFacts>> FactsFor(const std::string& key,
                                                                  const sym::Binary& bin,
                                                                  const std::string& path,
                                                                  const std::string& dwarf_file);
  sym::BinaryCache* cache_;
  unwinder::BpfSampler* sampler_;
  std::map<uint32_t, TrackedProcess> procs_;
  std::map<std::string, std::shared_ptr<const unwinder::GoBinaryFacts>> facts_;
};

// Field 22 of /proc/PID/stat (start time in clock ticks since boot), 0 if gone.
uint64_t ProcessStartTime(uint32_t pid);

}  // namespace sb::recorder
