#include "recorder/sample_labels.h"

#include <algorithm>

namespace sb::recorder {

LabelList LabelsOf(const sb_labels& l) {
  LabelList out;
  if (l.status != SB_LABELS_OK && l.status != SB_LABELS_TRUNCATED && l.status != SB_LABELS_READ_FAULT) return out;
  uint32_t n = std::min<uint32_t>(l.count, SB_MAX_LABELS);
  for (uint32_t i = 0; i < n; i++) {
    const sb_label& e = l.l[i];
    std::string k(e.key, std::min<size_t>(e.key_len, SB_LABEL_KEY_LEN));
    std::string v(e.val, std::min<size_t>(e.val_len, SB_LABEL_VAL_LEN));
    if (e.flags & SB_LABEL_KEY_CUT) k += kCutMark;
    if (e.flags & SB_LABEL_VAL_CUT) v += kCutMark;
    out.emplace_back(std::move(k), std::move(v));
  }
  std::sort(out.begin(), out.end());
  return out;
}

const char* LabelsStatusName(int status) {
  switch (status) {
    case SB_LABELS_OFF: return "off";
    case SB_LABELS_NONE: return "none";
    case SB_LABELS_OK: return "ok";
    case SB_LABELS_TRUNCATED: return "truncated";
    case SB_LABELS_NO_FACT: return "no_fact";
    case SB_LABELS_READ_FAULT: return "read_fault";
  }
  return "unknown";
}

bool IsReservedLabelKey(const std::string& key) {
  return key == "pid" || key == "tid" || key == "goroutine" || key == "thread" || key == "switches" ||
         key == "cpu_mode";
}

}  // namespace sb::recorder
