#include "tests/common/fetched_go.h"

#include <sstream>

#include "tests/common/shell_util.h"

namespace sb::test {

int ForEachFetchedGo(const std::string& source_dir, const std::function<void(const std::string& go, int minor)>& each,
                     std::string* error) {
  auto fetched = RunCommand(Quote(source_dir + "/tools/fetch-go.sh"), /*merge_stderr=*/false);
  if (fetched.status != 0) {
    *error = "tools/fetch-go.sh failed (it needs the Debian mirror): " + fetched.out;
    return -1;
  }
  int seen = 0;
  std::istringstream lines(fetched.out);
  std::string version, root;
  while (lines >> version >> root) {
    size_t dot = version.find('.');
    if (dot == std::string::npos) continue;
    each(root + "/bin/go", std::stoi(version.substr(dot + 1)));
    seen++;
  }
  *error = fetched.out;  // what was listed, for a caller that expected more
  return seen;
}

}  // namespace sb::test
