// A coredump test case: a core, the exact files it needs, and every thread's expected stack.
// Stored as NAME.json beside zstd-compressed files (NAME.core.zst, NAME.<file>.zst).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace sb::coredump {

struct CaseFile {
  std::string path;  // as the process saw it (NT_FILE path, or the executable's path)
  std::string file;  // stored name relative to the case's directory ("x.demo.zst")
  std::string role;  // "executable" or "library"
};

struct CaseThread {
  uint32_t lwp = 0;
  std::string stop;                  // "root", "stale_goroutine", ...
  std::vector<std::string> crossed;  // switches crossed, e.g. {"leaf", "systemstack"}
  std::vector<std::string> frames;   // "main.f+0x1c in main.go:12", leaf first
  // Optional: the goroutine's pprof labels ("key=value", sorted) and their status ("ok",
  // "none", "off", ...). Compared only when the case has them, so cases made without labels
  // pass unchanged.
  bool has_labels = false;
  std::vector<std::string> labels;
  std::string labels_status;
};

// A read at `address` fails as if unmapped; the case passes only if some thread's read hits it
// and that thread stops with read_fault.
struct CaseFault {
  uint64_t address = 0;
  uint32_t lwp = 0;
};

struct CoreCase {
  std::string name;
  std::string description;
  std::string arch;        // "amd64", "arm64"
  std::string go_version;  // "go1.19.8"
  std::string state;       // the unwind state the case was captured in ("systemstack", ...)
  std::string oracle;      // which oracle confirmed the goroutine frames, and how
  std::string core;        // stored core file name ("x.core.zst")
  std::vector<CaseFile> files;
  std::vector<CaseThread> threads;
  std::vector<CaseFault> faults;
  std::vector<std::string> must_cross;  // crossings whose counters must show `crossed` > 0
};

Result<CoreCase> ParseCase(std::string_view json_text);
std::string SerializeCase(const CoreCase& c);  // stable, pretty JSON

}  // namespace sb::coredump
