#include "unwinder/go_version.h"

#include <cstring>
#include <set>

#include "base/hex.h"
#include "unwinder/asm_lift.h"

namespace sb::unwinder {
namespace {

constexpr size_t kMaxSchedinitBytes = 16384;

// The Go string whose header {ptr, len} is at addr, if it names a Go release.
std::optional<RuntimeVersion> VersionAt(const sym::ElfFile& elf, uint64_t addr) {
  auto hdr = elf.ReadVaddr(addr, 16);
  if (!hdr.ok() || hdr->size() != 16) return std::nullopt;
  uint64_t ptr = 0, len = 0;
  memcpy(&ptr, hdr->data(), 8);
  memcpy(&len, hdr->data() + 8, 8);
  if (len == 0 || len > 128) return std::nullopt;
  auto text = elf.ReadVaddr(ptr, static_cast<size_t>(len));
  if (!text.ok()) return std::nullopt;
  RuntimeVersion v;
  v.version = std::string(*text);
  if (!sym::ParseGoVersion(v.version, &v.major, &v.minor)) return std::nullopt;
  return v;
}

}  // namespace

Result<RuntimeVersion> GoVersionFromRuntime(const sym::Binary& bin) {
  for (const auto& s : bin.elf().Symbols()) {
    if (s.name != "runtime.buildVersion") continue;
    if (auto v = VersionAt(bin.elf(), s.value)) {
      v->source = "symbol runtime.buildVersion";
      return *v;
    }
  }
  const sym::GoPclntab* go = bin.go();
  if (go == nullptr) return MakeError("not a Go binary");
  auto fn = go->FindFuncByName("runtime.schedinit");
  if (!fn || fn->end <= fn->entry) return MakeError("runtime.schedinit not in the pclntab");
  size_t len = static_cast<size_t>(std::min<uint64_t>(fn->end - fn->entry, kMaxSchedinitBytes));
  auto code = bin.elf().ReadVaddr(fn->entry, len);
  if (!code.ok()) return MakeError("runtime.schedinit: " + code.error());
  bool arm64 = bin.elf().arch() == sym::Arch::kArm64;
  auto insns = arm64 ? LiftArm64(*code, fn->entry) : LiftAmd64(*code, fn->entry);
  auto events = asmtrace::Trace(insns, arm64 ? Arm64Config(true) : Amd64Config(true));
  std::set<uint64_t> tried;
  for (const auto& e : events) {
    // `buildVersion = "unknown"`: the length 7 stored at a fixed address, buildVersion+8.
    if (e.kind != asmtrace::EventKind::kStore || e.size != 8 || e.value != asmtrace::Const(7)) continue;
    if (e.addr.base.size() < 2 || e.addr.base[0] != '#') continue;
    uint64_t addr = std::stoull(e.addr.base.substr(1), nullptr, 16) + static_cast<uint64_t>(e.addr.off) - 8;
    if (!tried.insert(addr).second) continue;
    if (auto v = VersionAt(bin.elf(), addr)) {
      v->source = "runtime.buildVersion at " + Hex(addr) + ", found through runtime.schedinit";
      return *v;
    }
  }
  return MakeError("runtime.buildVersion not found (no symbol; runtime.schedinit does not show it)");
}

}  // namespace sb::unwinder
