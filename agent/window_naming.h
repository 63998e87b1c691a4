// Where a window's file goes: DIR/YYYY-MM-DD/HHMMSSZ-EXE-PID.pb.gz, the window's start in UTC,
// so a directory listing sorts by time and a day is one folder to copy or delete.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace sb::agent {

// "2026-12-01/210603Z-demo-1234.pb.gz" (relative to DIR). EXE is the executable's base name,
// reduced to [A-Za-z0-9._+-] (at most 64 characters) so that any name is a safe file name.
// SEQ > 0 makes "...-1234.SEQ.pb.gz": for a name already taken by another window of the same
// process that started in the same second (an agent restarted within that second), which would
// otherwise be overwritten.
std::string WindowRelativePath(int64_t start_unix_ns, const std::string& exe, uint32_t pid, int seq = 0);
std::string SafeExeName(const std::string& exe);

struct WindowName {
  int64_t start_unix_s = 0;
  std::string exe;
  uint32_t pid = 0;
  int seq = 0;
};
// Parses a path made by WindowRelativePath (only its last two components count); nullopt for
// anything else (temporary files, foreign files).
std::optional<WindowName> ParseWindowRelativePath(const std::string& rel);

}  // namespace sb::agent
