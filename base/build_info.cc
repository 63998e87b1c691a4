#include "base/build_info.h"

#include <bpf/libbpf.h>

#include <string>

// SB_GIT_REVISION and SB_GIT_BRANCH, written at every build by base/git_describe.cmake (and
// rewritten only when they change, so that a commit rebuilds this file alone).
#include "base/git_describe.h"

#ifndef SB_VERSION
#error "SB_VERSION (the project version) is defined by base/CMakeLists.txt"
#endif

namespace sb {
namespace {

std::string Compiler() {
#if defined(__clang__)
  return "clang " + std::to_string(__clang_major__) + "." + std::to_string(__clang_minor__) + "." +
         std::to_string(__clang_patchlevel__);
#elif defined(__GNUC__)
  return "gcc " + std::to_string(__GNUC__) + "." + std::to_string(__GNUC_MINOR__) + "." +
         std::to_string(__GNUC_PATCHLEVEL__);
#else
  return "unknown";
#endif
}

}  // namespace

BuildInfo GetBuildInfo() {
  BuildInfo b;
  b.version = SB_VERSION;
  b.revision = SB_GIT_REVISION;
  b.branch = SB_GIT_BRANCH;
  b.compiler = Compiler();
  // The shared library's version, not the headers': a binary built against one libbpf runs with
  // whatever libbpf1 the machine has.
  b.libbpf = std::to_string(libbpf_major_version()) + "." + std::to_string(libbpf_minor_version());
  return b;
}

}  // namespace sb
