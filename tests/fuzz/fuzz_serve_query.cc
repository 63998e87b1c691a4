// Fuzz target: what the network and the disk hand to serve/. The bytes are a query string
// decoded by cpp-httplib as the server does, then checked by ParseProfileQuery (and any exe=
// pattern matched); the same bytes also go to ParseListenAddress and the spool's .json reader.
#include <httplib.h>

#include <cstdlib>
#include <string>

#include "serve/listen_address.h"
#include "serve/profile_query.h"
#include "serve/spool.h"
#include "tests/fuzz/fuzz_targets.h"

namespace sb::fuzz {

int FuzzServeQuery(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  serve::QueryParams params;
  httplib::detail::parse_query_text(text, params);
  auto q = serve::ParseProfileQuery(params, serve::QueryLimits{});
  if (q.ok()) {
    if ((q->pid == 0) == q->exe_regex.empty()) std::abort();  // exactly one of them
    if (q->seconds <= 0 || q->seconds > serve::QueryLimits{}.max_seconds) std::abort();
    if (!q->exe_regex.empty()) {
      auto m = serve::ExeMatcher::Compile(q->exe_regex);
      if (!m.ok()) std::abort();  // the parser accepted it
      (void)m->Matches("/usr/local/bin/demo-server");
      (void)m->Matches(std::string(200, 'a'));
      // The literal form the sampler gets must compile and match exactly that path.
      auto lit = serve::ExeMatcher::Compile(serve::ExactAlternation({q->exe_regex}));
      if (!lit.ok() || !lit->Matches(q->exe_regex)) std::abort();
    }
  } else if (q.error().find('\n') != std::string::npos) {
    std::abort();  // errors are one line
  }
  auto a = serve::ParseListenAddress(text);
  if (a.ok() && (a->port < 0 || a->port > 65535)) std::abort();
  (void)serve::ParseSpoolMeta(text);
  return 0;
}

}  // namespace sb::fuzz

#ifdef SB_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return sb::fuzz::FuzzServeQuery(data, size);
}
#endif
