#include "coredump/replay/case_file.h"
#include "base/hex.h"

#include <cstdio>

#include <nlohmann/json.hpp>

namespace sb::coredump {
namespace {

using nlohmann::json;

// Field readers that report the path of a bad field instead of throwing.
bool GetString(const json& j, const char* key, std::string* out, std::string* err, bool required) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (required) *err = std::string("missing \"") + key + "\"";
    return !required;
  }
  if (!it->is_string()) {
    *err = std::string("\"") + key + "\" must be a string";
    return false;
  }
  *out = it->get<std::string>();
  return true;
}

bool GetStrings(const json& j, const char* key, std::vector<std::string>* out, std::string* err) {
  auto it = j.find(key);
  if (it == j.end()) return true;
  if (!it->is_array()) {
    *err = std::string("\"") + key + "\" must be an array of strings";
    return false;
  }
  for (const auto& e : *it) {
    if (!e.is_string()) {
      *err = std::string("\"") + key + "\" must be an array of strings";
      return false;
    }
    out->push_back(e.get<std::string>());
  }
  return true;
}

bool GetU32(const json& j, const char* key, uint32_t* out, std::string* err) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_unsigned() || it->get<uint64_t>() > UINT32_MAX) {
    *err = std::string("\"") + key + "\" must be an unsigned 32-bit number";
    return false;
  }
  *out = static_cast<uint32_t>(it->get<uint64_t>());
  return true;
}

}  // namespace

Result<CoreCase> ParseCase(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return MakeError("case: not valid JSON");
  if (!j.is_object()) return MakeError("case: top level must be an object");
  CoreCase c;
  std::string err;
  auto fail = [&](const std::string& where) { return MakeError("case: " + where + err); };
  if (!GetString(j, "name", &c.name, &err, true) || !GetString(j, "arch", &c.arch, &err, true) ||
      !GetString(j, "core", &c.core, &err, true) ||
      !GetString(j, "description", &c.description, &err, false) ||
      !GetString(j, "go_version", &c.go_version, &err, false) ||
      !GetString(j, "state", &c.state, &err, false) || !GetString(j, "oracle", &c.oracle, &err, false) ||
      !GetStrings(j, "must_cross", &c.must_cross, &err))
    return fail("");
  if (c.arch != "amd64" && c.arch != "arm64") return MakeError("case: arch must be amd64 or arm64");
  if (auto it = j.find("files"); it != j.end()) {
    if (!it->is_array()) return MakeError("case: \"files\" must be an array");
    for (size_t i = 0; i < it->size(); i++) {
      const json& e = (*it)[i];
      if (!e.is_object()) return MakeError("case: files[" + std::to_string(i) + "] must be an object");
      CaseFile f;
      if (!GetString(e, "path", &f.path, &err, true) || !GetString(e, "file", &f.file, &err, true) ||
          !GetString(e, "role", &f.role, &err, false))
        return fail("files[" + std::to_string(i) + "]: ");
      c.files.push_back(std::move(f));
    }
  }
  if (auto it = j.find("threads"); it != j.end()) {
    if (!it->is_array()) return MakeError("case: \"threads\" must be an array");
    for (size_t i = 0; i < it->size(); i++) {
      const json& e = (*it)[i];
      std::string where = "threads[" + std::to_string(i) + "]: ";
      if (!e.is_object()) return MakeError("case: " + where + "must be an object");
      CaseThread t;
      if (!GetU32(e, "lwp", &t.lwp, &err) || !GetString(e, "stop", &t.stop, &err, true) ||
          !GetStrings(e, "crossed", &t.crossed, &err) || !GetStrings(e, "frames", &t.frames, &err) ||
          !GetStrings(e, "labels", &t.labels, &err) || !GetString(e, "labels_status", &t.labels_status, &err, false))
        return fail(where);
      t.has_labels = e.contains("labels") || e.contains("labels_status");
      c.threads.push_back(std::move(t));
    }
  }
  if (auto it = j.find("faults"); it != j.end()) {
    if (!it->is_array()) return MakeError("case: \"faults\" must be an array");
    for (size_t i = 0; i < it->size(); i++) {
      const json& e = (*it)[i];
      std::string where = "faults[" + std::to_string(i) + "]: ";
      std::string addr;
      CaseFault f;
      if (!e.is_object() || !GetString(e, "address", &addr, &err, true) || !GetU32(e, "lwp", &f.lwp, &err))
        return fail(where);
      char* end = nullptr;
      f.address = strtoull(addr.c_str(), &end, 0);
      if (addr.empty() || end == nullptr || *end != '\0') return MakeError("case: " + where + "bad address " + addr);
      c.faults.push_back(f);
    }
  }
  return c;
}

std::string SerializeCase(const CoreCase& c) {
  json j = json::object();
  j["name"] = c.name;
  j["description"] = c.description;
  j["arch"] = c.arch;
  j["go_version"] = c.go_version;
  j["state"] = c.state;
  j["oracle"] = c.oracle;
  j["core"] = c.core;
  j["must_cross"] = c.must_cross;
  json files = json::array();
  for (const auto& f : c.files) files.push_back({{"path", f.path}, {"file", f.file}, {"role", f.role}});
  j["files"] = files;
  json faults = json::array();
  for (const auto& f : c.faults) faults.push_back({{"address", Hex(f.address)}, {"lwp", f.lwp}});
  j["faults"] = faults;
  json threads = json::array();
  for (const auto& t : c.threads) {
    json e = {{"lwp", t.lwp}, {"stop", t.stop}, {"crossed", t.crossed}, {"frames", t.frames}};
    if (t.has_labels) {
      e["labels"] = t.labels;
      e["labels_status"] = t.labels_status;
    }
    threads.push_back(std::move(e));
  }
  j["threads"] = threads;
  return j.dump(2) + "\n";
}

}  // namespace sb::coredump
