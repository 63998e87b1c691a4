#include "exitprobe/stack_record.h"

#include <cstring>

#include "unwinder/sample_record.h"

namespace sb::exitprobe {

size_t XpStackRecordSize(uint32_t nframes, uint32_t labels_count) {
  return sizeof(sb_xp_stack_record) + unwinder::SampleRecordSize(nframes, 0, labels_count);
}

std::string UnpackXpStackRecord(const void* data, size_t size, sb_xp_stack* out) {
  out->func = 0;
  out->pad = 0;
  out->ns = 0;
  out->bias = 0;
  if (data == nullptr || size < sizeof(sb_xp_stack_record)) {
    std::memset(&out->s, 0, sizeof(out->s));
    return "call-path record of " + std::to_string(size) + " bytes, shorter than its header";
  }
  const auto* p = static_cast<const unsigned char*>(data);
  // No kernel stack: the exit probe sends none, so a record with kernel frames is not its own.
  std::string why = unwinder::UnpackSampleRecord(p + sizeof(sb_xp_stack_record), size - sizeof(sb_xp_stack_record),
                                                 &out->s, nullptr);
  if (!why.empty()) return "call-path record of " + std::to_string(size) + " bytes: " + why;
  // Exactly its counts' size: the BPF side sends no more, so more means another layout.
  size_t need = XpStackRecordSize(out->s.nframes, out->s.labels.count);
  if (size != need) {
    std::memset(&out->s, 0, sizeof(out->s));
    return "call-path record of " + std::to_string(size) + " bytes, its counts give " + std::to_string(need);
  }
  sb_xp_stack_record h;
  std::memcpy(&h, p, sizeof(h));
  out->func = h.func;
  out->ns = h.ns;
  out->bias = h.bias;
  return "";
}

}  // namespace sb::exitprobe
