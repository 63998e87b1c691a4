// "0x1f": the one spelling of addresses in messages, frame names and case files.
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>

namespace sb {

inline std::string Hex(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
  return buf;
}

}  // namespace sb
