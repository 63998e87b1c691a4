#include "symbolizer/kallsyms.h"

#include <algorithm>
#include <map>

#include "base/file_util.h"

namespace sb::sym {
namespace {

// No kernel function is this long: a pc this far past the last symbol below it lies in a gap
// (between the kernel image and the modules, or past the end of a module's text).
constexpr uint64_t kMaxSymbolSpan = 1 << 20;
// The last symbol has no successor to bound it.
constexpr uint64_t kLastSymbolSpan = 4096;

bool IsCodeType(char t) { return t == 't' || t == 'T' || t == 'w' || t == 'W'; }

std::string_view NextField(std::string_view* line) {
  size_t b = line->find_first_not_of(" \t");
  if (b == std::string_view::npos) {
    *line = {};
    return {};
  }
  size_t e = line->find_first_of(" \t", b);
  std::string_view f = line->substr(b, e == std::string_view::npos ? std::string_view::npos : e - b);
  *line = e == std::string_view::npos ? std::string_view{} : line->substr(e);
  return f;
}

bool ParseHex(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 16) return false;
  uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return false;
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  *out = v;
  return true;
}

}  // namespace

Result<KernelSymbols> KernelSymbols::Parse(std::string_view text) {
  KernelSymbols k;
  k.modules_.push_back("");
  std::map<std::string, uint16_t, std::less<>> module_index;
  struct Raw {
    uint64_t address;
    bool global;
    Entry e;
  };
  std::vector<Raw> raw;
  size_t code_lines = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    std::string_view addr = NextField(&line), type = NextField(&line), name = NextField(&line);
    uint64_t a = 0;
    if (type.size() != 1 || !IsCodeType(type[0]) || name.empty() || !ParseHex(addr, &a)) continue;
    code_lines++;
    if (a == 0) continue;  // hidden (kptr_restrict), or a symbol that has no address
    if (a > UINT64_MAX - kLastSymbolSpan) continue;  // the top page holds no code
    std::string_view mod = NextField(&line);
    uint16_t mi = 0;
    if (mod.size() > 2 && mod.front() == '[' && mod.back() == ']') {
      mod = mod.substr(1, mod.size() - 2);
      auto it = module_index.find(mod);
      if (it != module_index.end()) {
        mi = it->second;
      } else if (k.modules_.size() < 0xffff) {
        mi = static_cast<uint16_t>(k.modules_.size());
        k.modules_.emplace_back(mod);
        module_index.emplace(std::string(mod), mi);
      }
    }
    if (name.size() > 0xffff || k.names_.size() > 0xffffffffu - name.size()) continue;
    Entry e{a, static_cast<uint32_t>(k.names_.size()), static_cast<uint16_t>(name.size()), mi};
    k.names_.append(name);
    raw.push_back(Raw{a, type[0] == 'T' || type[0] == 'W', e});
  }
  if (raw.empty()) {
    if (code_lines > 0)
      return MakeError("every kernel symbol address reads as 0 (kernel.kptr_restrict is set, or CAP_SYSLOG "
                       "is missing): no kernel frames");
    return MakeError("no kernel code symbols found: no kernel frames");
  }
  // Aliases share an address (_stext, _text): keep a global name before a local one, then the
  // first listed.
  std::stable_sort(raw.begin(), raw.end(), [](const Raw& a, const Raw& b) {
    if (a.address != b.address) return a.address < b.address;
    return a.global && !b.global;
  });
  k.entries_.reserve(raw.size());
  for (const Raw& r : raw)
    if (k.entries_.empty() || k.entries_.back().address != r.address) k.entries_.push_back(r.e);
  k.limit_ = k.entries_.back().address + kLastSymbolSpan;
  return k;
}

Result<KernelSymbols> KernelSymbols::Load(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return MakeError(text.error() + ": no kernel frames");
  return Parse(*text);
}

std::optional<KernelSymbol> KernelSymbols::Find(uint64_t pc) const {
  if (entries_.empty() || pc < entries_.front().address || pc >= limit_) return std::nullopt;
  auto it = std::upper_bound(entries_.begin(), entries_.end(), pc,
                             [](uint64_t v, const Entry& e) { return v < e.address; });
  const Entry& e = *(it - 1);
  uint64_t span = it == entries_.end() ? kLastSymbolSpan : it->address - e.address;
  if (pc - e.address >= std::min(span, kMaxSymbolSpan)) return std::nullopt;
  KernelSymbol s;
  s.address = e.address;
  s.name = std::string_view(names_).substr(e.name_off, e.name_len);
  s.module = modules_[e.module];
  return s;
}

}  // namespace sb::sym
