// Test builders for the stack-sample ring record (ebpf/sample_record.h): the bytes a BPF program
// sends (header, frames, exact words, kernel frames, labels, one after the other) and a label.
// Shared by the sampler's unpack test and the exit probe's, whose records carry the same parts.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "ebpf/sample_record.h"

namespace sb::testrec {

// Appends n bytes at p to b.
inline void AppendBytes(std::vector<unsigned char>* b, const void* p, size_t n) {
  const auto* c = static_cast<const unsigned char*>(p);
  b->insert(b->end(), c, c + n);
}

// The packed record as sample_pack.bpf.h lays it out, after whatever b already holds.
inline void AppendSampleRecord(std::vector<unsigned char>* b, const sb_sample_record& h,
                               const std::vector<uint64_t>& frames, const std::vector<uint64_t>& exact,
                               const std::vector<uint64_t>& kernel, const std::vector<sb_label>& labels) {
  AppendBytes(b, &h, sizeof(h));
  AppendBytes(b, frames.data(), frames.size() * 8);
  AppendBytes(b, exact.data(), exact.size() * 8);
  AppendBytes(b, kernel.data(), kernel.size() * 8);
  AppendBytes(b, labels.data(), labels.size() * sizeof(sb_label));
}

// A sample header with fixed ids (pid 41, tid 42, goid 17), ended at a root, with nframes frames
// and nlabels labels; no kernel stack (status off), no comm. Tests set what they are about.
inline sb_sample_record MakeSampleHeader(uint32_t nframes, uint8_t nlabels) {
  sb_sample_record h{};
  h.pid = 41;
  h.tid = 42;
  h.time_ns = 123456789;
  h.goid = 17;
  h.goid_g = 0xc000001000;
  h.nframes = nframes;
  h.stop_reason = SB_STOP_ROOT;
  h.flags = SB_SAMPLE_HAS_GOID;
  h.labels_status = nlabels ? SB_LABELS_OK : SB_LABELS_NONE;
  h.labels_count = nlabels;
  h.labels_total = nlabels;
  h.kernel_status = SB_KSTACK_OFF;
  return h;
}

inline sb_label MakeLabel(const char* k, const char* v) {
  sb_label l{};
  l.key_len = static_cast<uint8_t>(std::strlen(k));
  l.val_len = static_cast<uint8_t>(std::strlen(v));
  std::memcpy(l.key, k, l.key_len);
  std::memcpy(l.val, v, l.val_len);
  return l;
}

}  // namespace sb::testrec
