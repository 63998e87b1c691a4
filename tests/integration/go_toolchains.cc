#include "tests/integration/go_toolchains.h"

#include <filesystem>
#include <sstream>

#include "tests/common/shell_util.h"
#include "tests/integration/record_harness.h"

#ifndef SB_SOURCE_DIR
#error "SB_SOURCE_DIR must name the source tree"
#endif
#ifndef SB_VERSIONS_BUILD_DIR
#error "SB_VERSIONS_BUILD_DIR must name where per-version workloads are built"
#endif

namespace sb::itest {

const std::vector<std::string>& SupportedGoVersions() {
  static const std::vector<std::string> v = {"1.19", "1.21", "1.22", "1.23", "1.24", "1.25", "1.26", "1.27"};
  return v;
}

std::string GoFor(const std::string& version, bool fetch, std::string* why) {
  if (version == "1.19") return kGo;
  if (!fetch) {
    std::string go = std::string(SB_SOURCE_DIR) + "/.cache/go/go" + version + "/usr/lib/go-" + version + "/bin/go";
    if (std::filesystem::exists(go)) return go;
    *why = "no Go " + version + " toolchain in .cache/go (tools/fetch-go.sh " + version + ")";
    return "";
  }
  auto r = sb::test::RunCommand(sb::test::Quote(SB_SOURCE_DIR "/tools/fetch-go.sh") + " " + version,
                                /*merge_stderr=*/false);
  std::istringstream lines(r.out);
  std::string v, root;
  if (r.status == 0 && lines >> v >> root && v == version) return root + "/bin/go";
  *why = "tools/fetch-go.sh " + version + " failed (it needs the Debian mirror): " + r.out;
  return "";
}

std::string BuildWorkload(const std::string& go, const std::string& version, const std::string& name, bool cgo,
                          std::string* why) {
  std::string dir = std::string(SB_VERSIONS_BUILD_DIR) + "/go" + version;
  std::string out = dir + "/" + name;
  std::string src = std::string(SB_SOURCE_DIR) + "/testdata/workloads/" + name;
  auto r = sb::test::RunCommand("mkdir -p " + sb::test::Quote(dir) + " && cd " + sb::test::Quote(src) +
                                " && env GOTOOLCHAIN=local GOFLAGS= CGO_ENABLED=" + (cgo ? "1" : "0") +
                                " GOCACHE=" + sb::test::Quote(SB_GOCACHE) +
                                " " + sb::test::Quote(go) + " build -o " + sb::test::Quote(out) + " .");
  if (r.status != 0) {
    *why = "go" + version + " build " + name + ": " + r.out;
    return "";
  }
  return out;
}

}  // namespace sb::itest
