// The Go toolchains 1.21-1.27 that tools/fetch-go.sh brings into .cache/go (fetching the missing
// ones from the Debian mirror), for the tests that build programs with every supported release.
#pragma once

#include <functional>
#include <string>

namespace sb::test {

// Runs SOURCE_DIR/tools/fetch-go.sh and calls EACH(go, minor) for every toolchain it lists, in
// its order. Returns how many it listed; -1, with *ERROR, when the script failed.
int ForEachFetchedGo(const std::string& source_dir, const std::function<void(const std::string& go, int minor)>& each,
                     std::string* error);

}  // namespace sb::test
