#include "unwinder/sample_record.h"

#include <cstring>

namespace sb::unwinder {

size_t SampleRecordSize(uint32_t nframes, uint32_t kernel_nframes, uint32_t labels_count) {
  size_t exact_words = nframes == 0 ? 0 : (nframes + 63) / 64;
  return sizeof(sb_sample_record) + (size_t{nframes} + exact_words + kernel_nframes) * sizeof(uint64_t) +
         size_t{labels_count} * sizeof(sb_label);
}

std::string UnpackSampleRecord(const void* data, size_t size, sb_cpu_sample* out) {
  return UnpackSampleRecord(data, size, &out->s, &out->kernel);
}

std::string UnpackSampleRecord(const void* data, size_t size, sb_sample* out_s, sb_kernel_stack* kernel) {
  std::memset(out_s, 0, sizeof(*out_s));
  if (kernel) std::memset(kernel, 0, sizeof(*kernel));
  if (data == nullptr || size < sizeof(sb_sample_record))
    return "sample record of " + std::to_string(size) + " bytes, shorter than its header";
  sb_sample_record h;
  std::memcpy(&h, data, sizeof(h));
  if (h.nframes > SB_MAX_FRAMES) return "sample record with " + std::to_string(h.nframes) + " frames";
  if (h.kernel_nframes > SB_MAX_KERNEL_FRAMES || (kernel == nullptr && h.kernel_nframes > 0))
    return "sample record with " + std::to_string(h.kernel_nframes) + " kernel frames" +
           (kernel == nullptr ? " from a program that sends none" : "");
  if (h.labels_count > SB_MAX_LABELS)
    return "sample record with " + std::to_string(h.labels_count) + " labels";
  size_t need = SampleRecordSize(h.nframes, h.kernel_nframes, h.labels_count);
  if (size < need)
    return "sample record of " + std::to_string(size) + " bytes, its counts need " + std::to_string(need);

  sb_sample& s = *out_s;
  s.pid = h.pid;
  s.tid = h.tid;
  s.time_ns = h.time_ns;
  s.goid = h.goid;
  s.goid_g = h.goid_g;
  s.nframes = h.nframes;
  s.stop_reason = h.stop_reason;
  s.flags = h.flags;
  s.crossed = h.crossed;
  s.labels.status = h.labels_status;
  s.labels.count = h.labels_count;
  s.labels.total = h.labels_total;
  std::memcpy(s.comm, h.comm, sizeof(s.comm));
  s.comm[SB_COMM_LEN - 1] = '\0';
  if (kernel) {
    kernel->status = h.kernel_status;
    kernel->nframes = h.kernel_nframes;
    kernel->err = h.kernel_err;
  }

  const auto* p = static_cast<const unsigned char*>(data) + sizeof(h);
  std::memcpy(s.frames, p, size_t{h.nframes} * sizeof(uint64_t));
  p += size_t{h.nframes} * sizeof(uint64_t);
  size_t exact_words = h.nframes == 0 ? 0 : (h.nframes + 63) / 64;
  std::memcpy(s.exact, p, exact_words * sizeof(uint64_t));
  p += exact_words * sizeof(uint64_t);
  if (kernel) std::memcpy(kernel->frames, p, size_t{h.kernel_nframes} * sizeof(uint64_t));
  p += size_t{h.kernel_nframes} * sizeof(uint64_t);
  std::memcpy(s.labels.l, p, size_t{h.labels_count} * sizeof(sb_label));
  for (int i = 0; i < h.labels_count; i++) {  // lengths within their buffers, whatever was sent
    if (s.labels.l[i].key_len > SB_LABEL_KEY_LEN) s.labels.l[i].key_len = SB_LABEL_KEY_LEN;
    if (s.labels.l[i].val_len > SB_LABEL_VAL_LEN) s.labels.l[i].val_len = SB_LABEL_VAL_LEN;
  }
  return "";
}

}  // namespace sb::unwinder
