// `switchback --version`: the build (version, commit, libbpf) and what this kernel offers, the
// facts a bug report needs first. Probed at run time on the machine asking.
#include <string>

#include <fmt/format.h>

#include "base/build_info.h"
#include "base/kernel_features.h"
#include "tools/switchback/commands.h"

namespace sb::cli {

std::string VersionText() {
  BuildInfo b = GetBuildInfo();
  KernelFeatures k = ProbeKernelFeatures();
  std::string out = fmt::format("switchback {}\n", b.version);
  out += fmt::format("commit: {}{}\n", b.revision, b.branch.empty() ? "" : " (branch " + b.branch + ")");
  out += fmt::format("compiler: {}\n", b.compiler);
  out += fmt::format("libbpf: {}\n", b.libbpf);
  out += fmt::format("kernel: {}\n", k.release.empty() ? "unknown" : k.release);
  out += fmt::format("  btf: {}\n", DescribeSupport(k.btf, ""));
  out += fmt::format("  bpf_loop: {}\n", DescribeSupport(k.bpf_loop, k.unknown_reason));
  out += fmt::format("  uprobe_multi: {}\n", DescribeSupport(k.uprobe_multi, k.unknown_reason));
  out += fmt::format("  ringbuf: {}", DescribeSupport(k.ringbuf, k.unknown_reason));  // CLI11 ends the line
  return out;
}

void AddVersionFlag(CLI::App& app) {
  app.set_version_flag("--version", VersionText,
                       "print the version, the commit, the libbpf in use and the kernel's BPF features\n"
                       "(BTF, bpf_loop, uprobe_multi, ring buffer; probing them needs root), then exit");
}

}  // namespace sb::cli
