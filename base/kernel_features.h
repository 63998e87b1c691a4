// The running kernel's BPF features that decide what switchback can do on it, probed at run time
// (a kernel's version number says little: distributions backport BPF features). For
// `switchback --version` and the build_info metric; the sampler and the tracer check what they
// need themselves when they load.
#pragma once

#include <string>

namespace sb {

// kUnknown: the probe could not run (bpf() refused: no CAP_BPF, or a locked-down kernel).
enum class Support { kYes, kNo, kUnknown };

struct KernelFeatures {
  std::string release;                    // uname -r
  Support btf = Support::kUnknown;        // /sys/kernel/btf/vmlinux: CO-RE relocations, needed
  Support bpf_loop = Support::kUnknown;   // the bpf_loop helper (5.17+): the sampler's frame loop
  Support uprobe_multi = Support::kUnknown;  // uprobe_multi links (6.6+): `trace` attaches in one link
  Support ringbuf = Support::kUnknown;    // BPF ring buffer maps (5.8+)
  // Why the BPF probes say unknown, e.g. "needs root"; empty when they ran.
  std::string unknown_reason;
};

// Cheap (a few bpf() calls, no program attached, nothing left behind) but not free: callers
// that need it more than once keep the result.
KernelFeatures ProbeKernelFeatures();

// "true", "false", "unknown": Prometheus label values.
const char* SupportLabel(Support s);

// "yes", "no", "unknown (REASON)": for people.
std::string DescribeSupport(Support s, const std::string& unknown_reason);

}  // namespace sb
