#include "serve/spool.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/file_util.h"

namespace sb::serve {
namespace fs = std::filesystem;

namespace {

// "00000000000000000042" -> 42; nullopt for anything else.
std::optional<uint64_t> SeqOf(const std::string& stem) {
  if (stem.size() != 20) return std::nullopt;
  uint64_t v = 0;
  for (char c : stem) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

Status CopyFile(const std::string& from, const std::string& to) {
  auto data = ReadFile(from);
  if (!data.ok()) return data.take_error();
  int fd = open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return MakeError(to + ": " + strerror(errno));
  size_t off = 0;
  while (off < data->size()) {
    ssize_t n = write(fd, data->data() + off, data->size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::string e = strerror(errno);
      close(fd);
      return MakeError(to + ": " + e);
    }
    off += static_cast<size_t>(n);
  }
  fsync(fd);
  close(fd);
  return Status::Ok();
}

}  // namespace

std::string SpoolMetaJson(const SpoolItem& item) {
  nlohmann::json j{{"name", item.name}, {"from", item.from}, {"until", item.until},
                   {"pid", item.pid},   {"exe", item.exe},   {"bytes", item.bytes}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Result<SpoolItem> ParseSpoolMeta(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return MakeError("not a JSON object");
  SpoolItem it;
  auto str = [&](const char* k, std::string* out) {
    auto f = j.find(k);
    if (f == j.end() || !f->is_string()) return false;
    *out = f->get<std::string>();
    return true;
  };
  auto num = [&](const char* k, auto* out) {
    auto f = j.find(k);
    if (f == j.end() || !f->is_number_integer()) return false;
    *out = f->get<std::remove_pointer_t<decltype(out)>>();
    return true;
  };
  if (!str("name", &it.name) || it.name.empty()) return MakeError("no \"name\"");
  if (!num("from", &it.from) || !num("until", &it.until) || it.until < it.from) return MakeError("bad \"from\"/\"until\"");
  if (!num("pid", &it.pid)) return MakeError("no \"pid\"");
  if (!num("bytes", &it.bytes)) return MakeError("no \"bytes\"");
  str("exe", &it.exe);
  return it;
}

std::string Spool::PathOf(uint64_t seq, const char* ext) const {
  char name[40];
  snprintf(name, sizeof name, "%020llu%s", static_cast<unsigned long long>(seq), ext);
  return dir_ + "/" + name;
}

Result<std::unique_ptr<Spool>> Spool::Open(const std::string& dir, uint64_t max_bytes,
                                           const std::function<void(const std::string&)>& log) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return MakeError("spool " + dir + ": " + ec.message());
  if (access(dir.c_str(), W_OK | X_OK) != 0) return MakeError("spool " + dir + ": " + strerror(errno));
  std::unique_ptr<Spool> s(new Spool(dir, max_bytes));
  std::map<uint64_t, bool> has_data;
  std::vector<uint64_t> metas;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    std::string stem = name.substr(0, name.find('.'));
    std::string ext = name.substr(stem.size());
    auto seq = SeqOf(stem);
    if (seq.has_value() && ext == ".pb.gz") has_data[*seq] = true;
    else if (seq.has_value() && ext == ".json") metas.push_back(*seq);
    else if (name.find(".tmp") != std::string::npos) {
      fs::remove(e.path(), ec);  // a write that did not finish
      log("push: spool: removed unfinished " + name);
    }
    if (seq.has_value()) s->next_seq_ = std::max(s->next_seq_, *seq + 1);
  }
  for (uint64_t seq : metas) {
    auto text = ReadFile(s->PathOf(seq, ".json"));
    Result<SpoolItem> it = text.ok() ? ParseSpoolMeta(*text) : Result<SpoolItem>(text.take_error());
    if (!it.ok() || !has_data.count(seq)) {
      log("push: spool: removed damaged window " + std::to_string(seq) + ": " +
          (it.ok() ? std::string("profile missing") : it.error()));
      (void)s->RemoveFiles(seq);
      has_data.erase(seq);
      continue;
    }
    it->seq = seq;
    it->data_path = s->PathOf(seq, ".pb.gz");
    it->bytes = fs::file_size(it->data_path, ec);
    if (ec) it->bytes = 0;
    s->bytes_ += it->bytes;
    s->items_[seq] = std::move(*it);
    has_data.erase(seq);
  }
  for (const auto& [seq, unused] : has_data) {  // a profile whose .json never landed
    log("push: spool: removed unfinished window " + std::to_string(seq));
    (void)s->RemoveFiles(seq);
  }
  return s;
}

Result<SpoolItem> Spool::Add(const std::string& profile_path, SpoolItem item, uint64_t keep_seq,
                             std::vector<SpoolItem>* dropped) {
  std::error_code ec;
  uint64_t size = fs::file_size(profile_path, ec);
  if (ec) return MakeError(profile_path + ": " + ec.message());
  item.seq = next_seq_++;
  item.bytes = size;
  item.data_path = PathOf(item.seq, ".pb.gz");
  if (size > max_bytes_) {  // can never fit: the newest is the one dropped
    dropped->push_back(item);
    return item;
  }
  // Oldest first, sparing the one in flight.
  for (auto it = items_.begin(); bytes_ + size > max_bytes_ && it != items_.end();) {
    if (it->first == keep_seq) {
      ++it;
      continue;
    }
    dropped->push_back(it->second);
    (void)RemoveFiles(it->first);
    bytes_ -= it->second.bytes;
    it = items_.erase(it);
  }
  std::string tmp = item.data_path + ".tmp";
  unlink(tmp.c_str());
  if (link(profile_path.c_str(), tmp.c_str()) != 0) {  // another file system: copy
    Status st = CopyFile(profile_path, tmp);
    if (!st.ok()) {
      unlink(tmp.c_str());
      return MakeError("spool: " + st.error());
    }
  }
  if (rename(tmp.c_str(), item.data_path.c_str()) != 0) {
    std::string e = strerror(errno);
    unlink(tmp.c_str());
    return MakeError("spool: " + item.data_path + ": " + e);
  }
  Status st = WriteFileAtomic(PathOf(item.seq, ".json"), SpoolMetaJson(item));
  if (!st.ok()) {
    unlink(item.data_path.c_str());
    return MakeError("spool: " + st.error());
  }
  bytes_ += size;
  items_[item.seq] = item;
  return item;
}

std::optional<SpoolItem> Spool::Oldest() const {
  if (items_.empty()) return std::nullopt;
  return items_.begin()->second;
}

Status Spool::RemoveFiles(uint64_t seq) {
  // The .json first: once it is gone the item no longer exists, whatever happens next.
  std::string meta = PathOf(seq, ".json");
  if (unlink(meta.c_str()) != 0 && errno != ENOENT) return MakeError("spool: " + meta + ": " + strerror(errno));
  int dfd = open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  unlink(PathOf(seq, ".pb.gz").c_str());
  return Status::Ok();
}

Status Spool::Remove(uint64_t seq) {
  auto it = items_.find(seq);
  if (it == items_.end()) return Status::Ok();
  Status st = RemoveFiles(seq);
  if (!st.ok()) return st;
  bytes_ -= it->second.bytes;
  items_.erase(it);
  return Status::Ok();
}

}  // namespace sb::serve
