#include "exitprobe/uprobe_attach.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace sb::exitprobe {
namespace {

// The BPF_LINK_CREATE attr for uprobe_multi (include/uapi/linux/bpf.h, 6.6+): the common link
// fields, then the uprobe_multi member of the union.
struct LinkCreateUprobeMulti {
  uint32_t prog_fd;
  uint32_t target_fd;
  uint32_t attach_type;
  uint32_t flags;
  uint64_t path;             // const char*
  uint64_t offsets;          // const u64*
  uint64_t ref_ctr_offsets;  // const u64* or 0
  uint64_t cookies;          // const u64*
  uint32_t cnt;
  uint32_t um_flags;         // BPF_F_UPROBE_MULTI_RETURN = 1
  uint32_t pid;
  uint32_t pad;
};
static_assert(sizeof(LinkCreateUprobeMulti) == 64);

constexpr uint32_t kUprobeMultiReturn = 1;
constexpr int kBpfLinkCreate = 28;  // enum bpf_cmd BPF_LINK_CREATE

Result<int> CreateMultiLink(int prog_fd, const std::string& path, uint32_t pid, bool ret,
                            const std::vector<uint64_t>& offsets, const std::vector<uint64_t>& cookies) {
  LinkCreateUprobeMulti attr{};
  attr.prog_fd = static_cast<uint32_t>(prog_fd);
  attr.attach_type = kBpfTraceUprobeMulti;
  attr.path = reinterpret_cast<uint64_t>(path.c_str());
  attr.offsets = reinterpret_cast<uint64_t>(offsets.data());
  attr.cookies = reinterpret_cast<uint64_t>(cookies.data());
  attr.cnt = static_cast<uint32_t>(offsets.size());
  attr.um_flags = ret ? kUprobeMultiReturn : 0;
  attr.pid = pid;
  long fd = syscall(__NR_bpf, kBpfLinkCreate, &attr, sizeof(attr));
  if (fd < 0) {
    int err = errno;
    return MakeError(fmt::format("uprobe_multi link on {} ({} sites): {}", path, offsets.size(),
                                 std::strerror(err)));
  }
  return static_cast<int>(fd);
}

}  // namespace

const char* AttachMethodName(AttachMethod m) {
  return m == AttachMethod::kUprobeMulti ? "uprobe_multi" : "perf-event uprobes";
}

Status UprobeLinks::Attach(bpf_program* prog, AttachMethod method, const std::string& path, uint32_t pid,
                           const std::vector<UprobeSite>& sites) {
  if (sites.empty()) return Status::Ok();
  if (method == AttachMethod::kUprobeMulti) {
    std::vector<int> fds;
    for (bool ret : {false, true}) {
      std::vector<uint64_t> offsets, cookies;
      for (const auto& s : sites)
        if (s.retprobe == ret) {
          offsets.push_back(s.file_offset);
          cookies.push_back(s.cookie);
        }
      if (offsets.empty()) continue;
      auto fd = CreateMultiLink(bpf_program__fd(prog), path, pid, ret, offsets, cookies);
      if (!fd.ok()) {
        for (int f : fds) close(f);
        return MakeError(fd.error());
      }
      fds.push_back(*fd);
    }
    multi_fds_.insert(multi_fds_.end(), fds.begin(), fds.end());
    sites_ += sites.size();
    return Status::Ok();
  }
  std::vector<bpf_link*> links;
  for (const auto& s : sites) {
    LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = s.cookie, .retprobe = s.retprobe);
    bpf_link* l = bpf_program__attach_uprobe_opts(prog, pid == 0 ? -1 : static_cast<int>(pid), path.c_str(),
                                                  s.file_offset, &opts);
    if (!l) {
      int err = errno;
      for (auto* x : links) bpf_link__destroy(x);
      return MakeError(fmt::format("uprobe at {}+{:#x}: {}", path, s.file_offset, std::strerror(err)));
    }
    links.push_back(l);
  }
  perf_links_.insert(perf_links_.end(), links.begin(), links.end());
  sites_ += sites.size();
  return Status::Ok();
}

void UprobeLinks::Detach() {
  for (int fd : multi_fds_) close(fd);
  multi_fds_.clear();
  for (auto* l : perf_links_) bpf_link__destroy(l);
  perf_links_.clear();
  sites_ = 0;
}

}  // namespace sb::exitprobe
