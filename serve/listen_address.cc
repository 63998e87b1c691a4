#include "serve/listen_address.h"

#include <arpa/inet.h>

#include <charconv>

namespace sb::serve {
namespace {

Result<int> ParsePort(std::string_view s, std::string_view whole) {
  int port = -1;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), port);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || port < 0 || port > 65535) {
    return MakeError("--listen " + std::string(whole) + ": the port must be a number from 0 to 65535");
  }
  return port;
}

bool IsLoopback(const std::string& host) {
  if (host == "localhost") return true;
  in_addr a4{};
  if (inet_pton(AF_INET, host.c_str(), &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
  in6_addr a6{};
  if (inet_pton(AF_INET6, host.c_str(), &a6) == 1) return IN6_IS_ADDR_LOOPBACK(&a6);
  return false;
}

bool ValidHostName(std::string_view h) {
  if (h.empty() || h.size() > 253) return false;
  for (char c : h) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::string ListenAddress::ToString() const {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

Result<ListenAddress> ParseListenAddress(std::string_view text) {
  ListenAddress a;
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {  // bare port: loopback only
    auto port = ParsePort(text, text);
    if (!port.ok()) return port.take_error();
    a.host = "127.0.0.1";
    a.port = *port;
    a.loopback = true;
    return a;
  }
  std::string_view host = text.substr(0, colon);
  auto port = ParsePort(text.substr(colon + 1), text);
  if (!port.ok()) return port.take_error();
  if (host.empty()) {
    return MakeError("--listen " + std::string(text) +
                     ": name the interface (127.0.0.1:PORT, or 0.0.0.0:PORT for every interface)");
  }
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return MakeError("--listen " + std::string(text) + ": unbalanced [ ]");
    host = host.substr(1, host.size() - 2);
    in6_addr a6{};
    if (inet_pton(AF_INET6, std::string(host).c_str(), &a6) != 1) {
      return MakeError("--listen " + std::string(text) + ": not an IPv6 address");
    }
  } else if (host.find(':') != std::string_view::npos) {
    return MakeError("--listen " + std::string(text) + ": write IPv6 addresses in brackets, e.g. [::1]:6060");
  } else if (!ValidHostName(host)) {
    return MakeError("--listen " + std::string(text) + ": not an address or host name");
  }
  a.host = std::string(host);
  a.port = *port;
  a.loopback = IsLoopback(a.host);
  return a;
}

}  // namespace sb::serve
