// The processes a recording follows: their executable's Go facts (analysed once per binary),
// load bias and memory maps. Kept after a process exits, so its samples can still be
// symbolized.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "ebpf/sampler.h"
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
  bool from_template = false;  // made by the sampler at its exec from its executable's template
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

  // --all: every Go executable tracked leaves a template in the sampler, from which the BPF
  // program follows each later process of it from its exec (AdoptFromTemplate), and every
  // executable found not to be Go is never reported again.
  void EnableTemplates() { templates_on_ = true; }
  // One line per executable and outcome: analysed (later processes followed from their exec),
  // not a Go program (never looked at again), analysis failed (retried at its next process).
  void OnBinaryEvent(std::function<void(const std::string&)> fn) { on_binary_ = std::move(fn); }
  // The process the sampler made from a template at its exec (SB_PROCESS_FROM_TEMPLATE): its
  // facts are the template's, its bias the one the exec proved; its maps are read while it
  // runs and made from the executable's segments when it is gone already.
  Result<TrackedProcess*> AdoptFromTemplate(const sb_new_process& ev);
  // The executable of a process that was gone before it could be read, named by its exec: PATH
  // is analysed if it is still the file that process ran (KEY), so that the next process of it
  // is followed from its exec. A non-Go file is marked so in the sampler.
  Status AnalyzeExecutable(const std::string& path, const sb_exe_key& key);
  // The executables analysed so far, by what the exec tracepoint names them (for the
  // not-analysed-yet counts): path, or none.
  std::string ExePathOf(const sb_exe_key& key) const;
  size_t templates() const { return templates_.size(); }

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
  // Leaves a template of this Go executable in the sampler (templates_on_), the least recently
  // used one making room when SB_MAX_TEMPLATES are there.
  void AddTemplate(const sb_exe_key& key, const TrackedProcess& p, const std::string& binary_key);
  void DropOldestTemplate();

  struct ExeTemplate {
    sb_exe_key key{};
    std::string exe;
    std::string binary_key;
    std::weak_ptr<sym::Binary> binary;  // not kept alive: the cache's bound holds
    std::string build_id;
    std::shared_ptr<const unwinder::GoBinaryFacts> facts;
    uint64_t last_used = 0;
  };
  sym::BinaryCache* cache_;
  unwinder::BpfSampler* sampler_;
  std::map<uint32_t, TrackedProcess> procs_;
  bool templates_on_ = false;
  std::map<uint32_t, ExeTemplate> templates_;  // by the sampler's template id
  std::map<std::string, std::string> exe_paths_;  // ExeKeyString -> path, of executables analysed
  uint64_t use_clock_ = 0;
  std::function<void(const std::string&)> on_binary_;
  std::map<std::string, std::string> binary_said_;  // executable (KeyString) -> the last outcome said
  void SayBinary(const sb_exe_key& key, const std::string& outcome, const std::string& line);
  std::map<std::string, std::shared_ptr<const unwinder::GoBinaryFacts>> facts_;
};

// Field 22 of /proc/PID/stat (start time in clock ticks since boot), 0 if gone.
uint64_t ProcessStartTime(uint32_t pid);

// What the sampler's exec tracepoint names a file by (sb_exe_key), from its stat.
sb_exe_key ExeKeyOf(const struct stat& st);

}  // namespace sb::recorder
