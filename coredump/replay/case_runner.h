// The coredump test-case workflow behind `switchback coredump new|check|rebase`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "coredump/replay/case_file.h"
#include "coredump/replay/replay.h"

namespace sb::coredump {

struct CaseReport {
  std::string name;
  std::string arch;
  std::string go_version;
  bool passed = false;
  std::vector<std::string> differences;  // one line each, empty when passed
  double replay_ms = 0;                   // replay alone (files already extracted)
  double load_ms = 0;                     // decompressing the core, extracting binaries
  uint64_t core_bytes = 0;                // the core's size, and its non-zero part held in memory
  uint64_t core_stored_bytes = 0;
  std::vector<std::string> crossed;       // crossings with crossed > 0 in this case
  size_t threads = 0;
};

// Loads CASE_JSON, replays and compares. The core is decompressed into memory (zero pages as
// holes, nothing on disk); binaries are extracted once into cache_dir as sparse files.
Result<CaseReport> CheckCase(const std::string& case_json, const std::string& cache_dir);
// Rewrites the expected threads of CASE_JSON from the current replay (after a reviewed change).
Status RebaseCase(const std::string& case_json, const std::string& cache_dir);
// Replays a case and returns the raw result (for `analyze`).
Result<ReplayResult> ReplayCase(const std::string& case_json, const std::string& cache_dir,
                                CoreCase* loaded = nullptr, bool record_reads = false);

struct NewCaseFile {
  std::string local;    // file on this machine
  std::string path;     // path as the process saw it
  std::string role;     // "executable" or "library"
};

struct NewCaseOptions {
  std::string core;  // the core: raw, zstd, lz4 or xz (by magic), or a /proc/self/fd path
  std::vector<NewCaseFile> files;
  std::string dir;   // where NAME.json goes; blobs in DIR/blobs/
  std::string name;
  std::string description;
  std::string state;
  std::string oracle;
  std::vector<std::string> must_cross;
  std::vector<CaseFault> faults;
  std::string cache_dir;
  std::string dlv_output;  // if set, checked with CompareWithDelve; a mismatch fails `new`
  std::string accept_delve_difference;  // unless this explains it: recorded in the case's oracle
  std::string gdb_output;  // if set, checked with CompareWithGdb; a mismatch fails `new`
};

// Stores the core and files (zstd, content-addressed blobs shared between cases), replays, and
// writes NAME.json with every thread's current stack as the expectation. Returns its path.
Result<std::string> NewCase(const NewCaseOptions& o);

// Checks a replay against Delve (`dlv core` output with `goroutines -t`): for every thread
// whose goroutine Delve lists, Delve's function names for that goroutine must equal the tail of
// our stack (our stack may have g0 frames above them). Returns one line per thread compared;
// `mismatches` gets one line per disagreement.
std::vector<std::string> CompareWithDelve(const ReplayResult& r, const std::string& dlv_text,
                                          std::vector<std::string>* mismatches);

// Checks a replay against gdb's `thread apply all bt`: for every thread, gdb's frames up to
// the first stack switch or root (where gdb's own unwinder stops being right) must equal our
// first frames.
std::vector<std::string> CompareWithGdb(const ReplayResult& r, const std::string& gdb_bt,
                                        std::vector<std::string>* mismatches);

// Every *.json directly in dir, sorted.
std::vector<std::string> FindCases(const std::string& dir);

}  // namespace sb::coredump
