// Pyroscope's documented HTTP ingest API (grafana.com/docs/pyroscope, "Pyroscope server HTTP
// API", v1.x): POST /ingest?name=APP.cpu{k=v,...}&from=UNIX&until=UNIX&format=pprof with the
// gzip pprof as the body; X-Scope-OrgID names the tenant in multi-tenant mode; a bearer token
// for the authenticating proxy in front. Sent with libcurl.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>

#include "base/result.h"

namespace sb::serve {

// APP.cpu{k=v,...}: characters Pyroscope's name syntax reserves (", { } =" and spaces) and
// control characters become '_' in the app name, keys and values; keys also follow
// Prometheus' label-name rule ([a-zA-Z_][a-zA-Z0-9_]*).
std::string IngestName(const std::string& app, const std::map<std::string, std::string>& labels);

// The default application name: the executable's file name.
std::string AppNameOfExe(const std::string& exe);

// --push URL: http(s)://host[:port][/prefix]; "/ingest" is appended unless already there.
Result<std::string> IngestEndpoint(const std::string& push_url);

struct IngestRequest {
  std::string endpoint;  // from IngestEndpoint
  std::string name;      // from IngestName
  int64_t from = 0;
  int64_t until = 0;
  std::string body;      // gzip pprof
  std::string tenant;    // X-Scope-OrgID, empty: none
  std::string token;     // Authorization: Bearer, empty: none
  double timeout_seconds = 30;
};

struct IngestOutcome {
  bool delivered = false;  // 2xx
  bool retry = false;      // worth trying again (network, timeout, 5xx, 408, 425, 429, 401, 403)
  long http_status = 0;    // 0 when there was no answer
  std::string error;       // one line, when not delivered
};

// The full URL with the query (split out for tests).
std::string IngestUrl(const IngestRequest& r);

// One attempt. Returns early (retry = true) once *cancel becomes true.
IngestOutcome PostIngest(const IngestRequest& r, const std::atomic<bool>* cancel);

}  // namespace sb::serve
