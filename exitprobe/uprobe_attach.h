// Attaches one BPF program to many uprobe sites of one file, with a BPF cookie per site.
// uprobe_multi (kernel 6.6+): every site in one link, created with the bpf(BPF_LINK_CREATE)
// syscall and our own attr layout, since libbpf 1.1 and the system headers predate it.
// Fallback: one perf-event uprobe per site (libbpf). Detaching is closing the link(s).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"

struct bpf_link;
struct bpf_program;

namespace sb::exitprobe {

enum class AttachMethod { kUprobeMulti, kPerfEvent };
const char* AttachMethodName(AttachMethod m);

struct UprobeSite {
  uint64_t file_offset = 0;
  uint64_t cookie = 0;
  bool retprobe = false;
};

// BPF_TRACE_UPROBE_MULTI, the expected attach type of a program meant for uprobe_multi links.
constexpr int kBpfTraceUprobeMulti = 48;

class UprobeLinks {
 public:
  UprobeLinks() = default;
  ~UprobeLinks() { Detach(); }
  UprobeLinks(const UprobeLinks&) = delete;
  UprobeLinks& operator=(const UprobeLinks&) = delete;

  // Attaches `prog` to all sites (pid 0: every process running the file). On error nothing
  // stays attached from this call. kUprobeMulti needs `prog` loaded with attach type 48.
  Status Attach(bpf_program* prog, AttachMethod method, const std::string& path, uint32_t pid,
                const std::vector<UprobeSite>& sites);
  void Detach();
  size_t sites() const { return sites_; }

 private:
  std::vector<int> multi_fds_;
  std::vector<bpf_link*> perf_links_;
  size_t sites_ = 0;
};

}  // namespace sb::exitprobe
