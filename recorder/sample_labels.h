// Goroutine pprof labels of a raw sample (sb_labels, read in BPF by goroutine_labels.h) as
// key/value strings for the pprof writer: sorted by key, a cut key or value marked with
// kCutMark.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ebpf/unwind/unwind_types.h"

namespace sb::recorder {

using LabelList = std::vector<std::pair<std::string, std::string>>;

// Appended to a key or value longer than the BPF buffer (64 / 128 bytes).
inline constexpr const char* kCutMark = "...[cut]";

LabelList LabelsOf(const sb_labels& l);

// "ok", "none", "truncated", "no_fact", "read_fault", "off".
const char* LabelsStatusName(int status);

// Label keys switchback sets itself: a goroutine label with such a key is not copied (the
// sample's own value wins), and is counted.
bool IsReservedLabelKey(const std::string& key);

}  // namespace sb::recorder
