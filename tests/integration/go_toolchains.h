// The Go toolchains of the per-version live tests (go_versions_test, labels_test,
// stack_ends_test): Debian's Go 1.19 and 1.21-1.27 from tools/fetch-go.sh's cache, and the
// workloads of testdata/workloads built with each of them.
#ifndef SWITCHBACK_TESTS_INTEGRATION_GO_TOOLCHAINS_H_
#define SWITCHBACK_TESTS_INTEGRATION_GO_TOOLCHAINS_H_

#include <string>
#include <vector>

namespace sb::itest {

// The releases the project supports, oldest first.
const std::vector<std::string>& SupportedGoVersions();

// The `go` of release VERSION ("1.N"): Debian's for 1.19, else tools/fetch-go.sh's cache,
// which it fills when FETCH is set (it needs the Debian mirror). Empty, with *WHY, when absent.
std::string GoFor(const std::string& version, bool fetch, std::string* why);

// Builds testdata/workloads/NAME with GO into SB_VERSIONS_BUILD_DIR/goVERSION/NAME (a Go build
// cache per version beside it). Empty, with *WHY, when the build fails.
std::string BuildWorkload(const std::string& go, const std::string& version, const std::string& name, bool cgo,
                          std::string* why);

}  // namespace sb::itest

#endif  // SWITCHBACK_TESTS_INTEGRATION_GO_TOOLCHAINS_H_
