#include "serve/pyroscope_ingest.h"

#include <curl/curl.h>

#include <mutex>

namespace sb::serve {
namespace {

bool Reserved(char c) {
  return static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == ',' || c == '{' || c == '}' || c == '=' ||
         c == ' ' || c == '"';
}

std::string Clean(const std::string& s) {
  std::string out = s;
  for (char& c : out) {
    if (Reserved(c)) c = '_';
  }
  return out;
}

std::string LabelKey(const std::string& k) {
  std::string out;
  for (char c : k) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (c >= '0' && c <= '9');
    out += ok ? c : '_';
  }
  if (out.empty() || (out[0] >= '0' && out[0] <= '9')) out = "_" + out;
  return out;
}

std::string Escape(CURL* curl, const std::string& s) {
  char* e = curl_easy_escape(curl, s.data(), static_cast<int>(s.size()));
  std::string out = e != nullptr ? e : "";
  curl_free(e);
  return out;
}


size_t KeepSome(char* p, size_t size, size_t n, void* userdata) {
  auto* body = static_cast<std::string*>(userdata);
  size_t len = size * n;
  if (body->size() < 200) body->append(p, std::min(len, 200 - body->size()));
  return len;
}

int Progress(void* cancel, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* c = static_cast<const std::atomic<bool>*>(cancel);
  return (c != nullptr && c->load()) ? 1 : 0;
}

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string OneLine(std::string s) {
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

}  // namespace

std::string IngestName(const std::string& app, const std::map<std::string, std::string>& labels) {
  std::string out = Clean(app.empty() ? "switchback" : app) + ".cpu{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out += ',';
    first = false;
    out += LabelKey(k) + "=" + Clean(v);
  }
  return out + "}";
}

std::string AppNameOfExe(const std::string& exe) {
  size_t slash = exe.rfind('/');
  std::string base = slash == std::string::npos ? exe : exe.substr(slash + 1);
  return base.empty() ? "switchback" : base;
}

Result<std::string> IngestEndpoint(const std::string& push_url) {
  std::string u = push_url;
  if (u.rfind("http://", 0) != 0 && u.rfind("https://", 0) != 0) {
    return MakeError("--push " + push_url + ": give an http:// or https:// URL of the Pyroscope server");
  }
  size_t host_start = u.find("://") + 3;
  if (host_start >= u.size() || u[host_start] == '/') return MakeError("--push " + push_url + ": no host");
  if (u.find_first_of("?#", host_start) != std::string::npos) {
    return MakeError("--push " + push_url + ": no query or fragment (the agent adds /ingest?...)");
  }
  for (char c : u) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return MakeError("--push: spaces or control characters in URL");
  }
  while (!u.empty() && u.back() == '/') u.pop_back();
  if (u.size() < 7 || u.compare(u.size() - 7, 7, "/ingest") != 0) u += "/ingest";
  return u;
}

std::string IngestUrl(const IngestRequest& r) {
  GlobalInit();
  CURL* curl = curl_easy_init();
  std::string url = r.endpoint + "?name=" + Escape(curl, r.name) + "&from=" + std::to_string(r.from) +
                    "&until=" + std::to_string(r.until) + "&format=pprof&spyName=switchback";
  curl_easy_cleanup(curl);
  return url;
}

IngestOutcome PostIngest(const IngestRequest& r, const std::atomic<bool>* cancel) {
  GlobalInit();
  IngestOutcome out;
  CURL* curl = curl_easy_init();
  if (curl == nullptr) {
    out.retry = true;
    out.error = "curl_easy_init failed";
    return out;
  }
  std::string url = IngestUrl(r);
  std::string answer;
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Content-Type: application/octet-stream");
  headers = curl_slist_append(headers, "Expect:");  // send the body at once, no 100-continue round trip
  if (!r.tenant.empty()) headers = curl_slist_append(headers, ("X-Scope-OrgID: " + r.tenant).c_str());
  if (!r.token.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + r.token).c_str());
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, r.body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "switchback-agent");
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(r.timeout_seconds * 1000));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::min(r.timeout_seconds, 10.0) * 1000));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, KeepSome);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, Progress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(cancel));
  CURLcode rc = curl_easy_perform(curl);
  if (rc == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &out.http_status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK) {
    out.retry = true;
    out.error = std::string(curl_easy_strerror(rc));
    return out;
  }
  long s = out.http_status;
  if (s >= 200 && s < 300) {
    out.delivered = true;
    return out;
  }
  out.retry = s >= 500 || s == 408 || s == 425 || s == 429 || s == 401 || s == 403 || s < 200;
  out.error = "HTTP " + std::to_string(s) + (answer.empty() ? "" : ": " + OneLine(answer));
  return out;
}

}  // namespace sb::serve
