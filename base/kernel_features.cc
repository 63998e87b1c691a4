#include "base/kernel_features.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace sb {
namespace {

// BPF_TRACE_UPROBE_MULTI (include/uapi/linux/bpf.h, 6.6+): Debian 12's headers predate it.
constexpr int kBpfTraceUprobeMulti = 48;
constexpr int kBpfLinkCreate = 28;  // enum bpf_cmd BPF_LINK_CREATE

// `r0 = 0; exit`: the smallest program every verifier accepts.
const bpf_insn kReturnZero[] = {
    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .src_reg = 0, .off = 0, .imm = 0},
    {.code = BPF_JMP | BPF_EXIT, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
};
constexpr size_t kReturnZeroLen = sizeof(kReturnZero) / sizeof(kReturnZero[0]);

// libbpf's probes cannot tell "not permitted" from "not supported" (libbpf 1.1 reports a helper
// as supported when the load fails before the verifier ran), so whether bpf() may load a
// perf_event program at all is asked first. Returns "" when it may, else why not.
std::string BpfRefusedReason() {
  int fd = bpf_prog_load(BPF_PROG_TYPE_PERF_EVENT, nullptr, "GPL", kReturnZero, kReturnZeroLen, nullptr);
  int err = errno;
  if (fd >= 0) {
    close(fd);
    return "";
  }
  if ((err == EPERM || err == EACCES) && geteuid() != 0) return "needs root";
  return std::string("bpf() refused: ") + std::strerror(err);
}

Support FromProbe(int r) {
  if (r == 1) return Support::kYes;
  if (r == 0) return Support::kNo;
  return Support::kUnknown;
}

// The BPF_LINK_CREATE attr for uprobe_multi (6.6+): the common link fields, then the
// uprobe_multi member of the union. Same layout as exitprobe's, which attaches with it.
struct LinkCreateUprobeMulti {
  uint32_t prog_fd;
  uint32_t target_fd;
  uint32_t attach_type;
  uint32_t flags;
  uint64_t path;
  uint64_t offsets;
  uint64_t ref_ctr_offsets;
  uint64_t cookies;
  uint32_t cnt;
  uint32_t um_flags;
  uint32_t pid;
  uint32_t pad;
};
static_assert(sizeof(LinkCreateUprobeMulti) == 64);

// libbpf's own probe (newer libbpf, features.c): a kernel with uprobe_multi gets as far as
// opening the path and refuses "/" with EBADF (not a regular file), attaching nothing; an older
// kernel refuses the attach type with EINVAL, at load or at link creation.
Support ProbeUprobeMulti() {
  LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = static_cast<bpf_attach_type>(kBpfTraceUprobeMulti));
  int prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, nullptr, "GPL", kReturnZero, kReturnZeroLen, &opts);
  if (prog < 0) return errno == EPERM ? Support::kUnknown : Support::kNo;
  uint64_t offset = 0;
  LinkCreateUprobeMulti attr{};
  attr.prog_fd = static_cast<uint32_t>(prog);
  attr.attach_type = kBpfTraceUprobeMulti;
  attr.path = reinterpret_cast<uint64_t>("/");
  attr.offsets = reinterpret_cast<uint64_t>(&offset);
  attr.cnt = 1;
  long link = syscall(__NR_bpf, kBpfLinkCreate, &attr, sizeof(attr));
  int err = errno;
  if (link >= 0) close(static_cast<int>(link));
  close(prog);
  return link < 0 && err == EBADF ? Support::kYes : Support::kNo;
}

}  // namespace

KernelFeatures ProbeKernelFeatures() {
  KernelFeatures f;
  struct utsname u {};
  if (uname(&u) == 0) f.release = u.release;
  struct stat st {};
  f.btf = stat("/sys/kernel/btf/vmlinux", &st) == 0 ? Support::kYes
          : errno == ENOENT                         ? Support::kNo
                                                    : Support::kUnknown;
  f.unknown_reason = BpfRefusedReason();
  if (!f.unknown_reason.empty()) return f;
  f.bpf_loop = FromProbe(libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop, nullptr));
  f.ringbuf = FromProbe(libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, nullptr));
  f.uprobe_multi = ProbeUprobeMulti();
  return f;
}

const char* SupportLabel(Support s) {
  switch (s) {
    case Support::kYes:
      return "true";
    case Support::kNo:
      return "false";
    case Support::kUnknown:
      break;
  }
  return "unknown";
}

std::string DescribeSupport(Support s, const std::string& unknown_reason) {
  switch (s) {
    case Support::kYes:
      return "yes";
    case Support::kNo:
      return "no";
    case Support::kUnknown:
      break;
  }
  return unknown_reason.empty() ? "unknown" : "unknown (" + unknown_reason + ")";
}

}  // namespace sb
