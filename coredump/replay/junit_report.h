// JUnit XML for `coredump check --junit`: the format every CI server reads (Jenkins, GitLab,
// GitHub Actions reporters): one <testsuite>, one <testcase> per case with its time, and a
// <failure> (the case replayed but a stack differs) or <error> (it could not be replayed) whose
// message is the first difference and whose body lists them all.
#pragma once

#include <string>
#include <vector>

namespace sb::coredump {

struct JunitCase {
  std::string name;       // the case name
  std::string classname;  // "coredump.amd64.go1.19.8"
  double seconds = 0;
  enum Outcome { kPassed, kFailed, kError } outcome = kPassed;
  std::string message;                 // one line
  std::vector<std::string> details;    // the body, one line each
};

std::string JunitXml(const std::string& suite, const std::vector<JunitCase>& cases, double seconds);

// XML text/attribute escaping; drops the control characters XML 1.0 cannot hold.
std::string XmlEscape(const std::string& s);

}  // namespace sb::coredump
