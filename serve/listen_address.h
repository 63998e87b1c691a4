// --listen ADDR: where the HTTP server binds. Profiles reveal code, so a bare port binds the
// loopback interface only; any other interface must be written out (0.0.0.0:6060, [::]:6060,
// 192.0.2.7:6060). ":6060" (Go's "every interface") is refused as ambiguous.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace sb::serve {

struct ListenAddress {
  std::string host;   // numeric IPv4/IPv6 address or a host name, without brackets
  int port = 0;       // 0: the kernel picks one (the server logs which)
  bool loopback = true;  // host is 127.0.0.0/8, ::1 or localhost
  std::string ToString() const;  // host:port, IPv6 in brackets
};

Result<ListenAddress> ParseListenAddress(std::string_view text);

}  // namespace sb::serve
