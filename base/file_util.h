// Small file helpers shared by every library: whole-file reads and atomic writes.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"

namespace sb {

// Reads a whole file; the error names the path and errno text.
Result<std::string> ReadFile(const std::string& path);

// Writes to PATH.tmp.PID then renames over PATH, so a reader never sees a half-written file.
Status WriteFileAtomic(const std::string& path, const std::string& data);

// Fails early (before any long work) when PATH's directory cannot take a new file.
Status CheckWritable(const std::string& path);

}  // namespace sb
