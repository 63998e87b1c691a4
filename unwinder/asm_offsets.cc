// The rules that read runtime struct offsets off traced runtime functions. Each rule names the
// Go source line it relies on (runtime/asm_{amd64,arm64}.s, sys_linux_*.s, tls_arm64.s,
// traceback.go); several functions give the same field, and they must agree.
#include "unwinder/asm_offsets.h"

#include <algorithm>
#include <set>

#include "base/hex.h"
#include "unwinder/asm_lift.h"
#include "unwinder/offset_fields.h"

namespace sb::unwinder {
namespace {

using asmtrace::Event;
using asmtrace::EventKind;
using asmtrace::Named;
using asmtrace::SplitDeref;
using asmtrace::Val;
using Events = std::vector<Event>;

constexpr size_t kMaxFunctionBytes = 8192;

// Values per field, with every function that gave it; a second value is a conflict.
class Collector {
 public:
  void Add(const std::string& field, int64_t value, const std::string& fn) {
    if (value < 0 || value > 0xfffe) return;
    auto& e = facts_[field];
    if (e.fns.empty()) {
      e.value = value;
    } else if (e.value != value) {
      e.conflict = true;
      e.others.push_back(std::to_string(value) + " (" + fn + ")");
      return;
    }
    if (std::find(e.fns.begin(), e.fns.end(), fn) == e.fns.end()) e.fns.push_back(fn);
  }
  std::optional<int64_t> Get(const std::string& field) const {
    auto it = facts_.find(field);
    if (it == facts_.end() || it->second.conflict || it->second.fns.empty()) return std::nullopt;
    return it->second.value;
  }
  std::vector<std::string> Functions(const std::string& field) const {
    auto it = facts_.find(field);
    return it == facts_.end() ? std::vector<std::string>{} : it->second.fns;
  }
  std::string Source(const std::string& field) const {
    auto it = facts_.find(field);
    std::string s = "asm:";
    if (it == facts_.end()) return s;
    for (size_t i = 0; i < it->second.fns.size(); i++) s += (i ? "," : "") + it->second.fns[i];
    return s;
  }
  void Finish(AsmOffsets* out) const {
    for (const auto& [field, e] : facts_) {
      if (field.find('+') != std::string::npos) {  // internal sums (sched+sp): reported via g.sched
        if (e.conflict) out->conflicts.push_back(Describe(field, e));
        continue;
      }
      if (e.conflict) out->conflicts.push_back(Describe(field, e));
      else if (!e.fns.empty()) out->fields[field] = AsmFact{e.value, Source(field)};
    }
  }

 private:
  struct Entry {
    int64_t value = 0;
    std::vector<std::string> fns;
    std::vector<std::string> others;
    bool conflict = false;
  };
  static std::string Describe(const std::string& field, const Entry& e) {
    std::string s = field + ": " + std::to_string(e.value) + " (";
    for (size_t i = 0; i < e.fns.size(); i++) s += (i ? "," : "") + e.fns[i];
    s += ")";
    for (const auto& o : e.others) s += " vs " + o;
    return s;
  }
  std::map<std::string, Entry> facts_;
};

// Runtime functions that never return to their caller.
bool NoReturn(const std::string& name) {
  for (const char* p : {"runtime.throw", "runtime.fatal", "runtime.panic", "runtime.goPanic", "runtime.gopanic",
                        "runtime.abort", "runtime.badmorestack", "runtime.badmcall", "runtime.morestack"}) {
    if (name.rfind(p, 0) == 0) return true;
  }
  return false;
}

bool DerefOf(const Val& v, std::string* inner, int64_t* off) { return SplitDeref(v, inner, off); }

// g.m: a word loaded from g that the function then uses as the base of another access
// (`MOVQ g_m(g), BX; MOVQ m_g0(BX), SI`). mcall, systemstack, morestack, nanotime1.
void RuleGM(const std::string& fn, const Events& ev, Collector* c) {
  std::set<std::string> bases;
  for (const Event& e : ev) {
    if (e.kind == EventKind::kLoad || e.kind == EventKind::kStore) bases.insert(e.addr.base);
    if (e.kind == EventKind::kCmp) {
      std::string inner;
      int64_t off = 0;
      if (DerefOf(e.value, &inner, &off)) bases.insert(inner);
      if (DerefOf(e.other, &inner, &off)) bases.insert(inner);
    }
  }
  for (const Event& e : ev) {
    if (e.kind == EventKind::kLoad && e.size == 8 && e.addr.base == "g" && bases.count(asmtrace::Deref(e.addr).base))
      c->Add("g.m", e.addr.off, fn);
  }
}

// m-like: "[X+g.m]" for any g-valued X (the g a function reloaded after switching still
// reaches the same m).
bool IsM(const std::string& s, int64_t gm) {
  std::string inner;
  int64_t off = 0;
  return DerefOf(Val{s, 0}, &inner, &off) && off == gm;
}

// "[[M+x]+y]": field x of m, then field y of that g.
bool MFieldThenG(const Val& v, int64_t gm, int64_t* x, int64_t* y) {
  std::string inner, m;
  return DerefOf(v, &inner, y) && DerefOf(Val{inner, 0}, &m, x) && IsM(m, gm);
}

// Switching to g0: `MOVQ m_g0(BX), SI; ...; MOVQ (g_sched+gobuf_sp)(SI), SP` gives m.g0 and
// sched+sp (mcall, systemstack, morestack). systemstack switches back to m.curg the same way and
// restores BP from curg.sched.bp (Go 1.21+ amd64, every arm64 release).
void RuleSwitchSp(const std::string& fn, const Events& ev, int64_t gm, bool back_to_curg, int fp_reg, Collector* c) {
  std::optional<int64_t> g0, curg;
  for (const Event& e : ev) {
    if (e.kind != EventKind::kRegWrite) continue;
    int64_t x = 0, y = 0;
    if (!MFieldThenG(e.value, gm, &x, &y)) continue;
    if (e.reg == asmtrace::kSP) {
      if (!g0) {
        g0 = x;
        c->Add("m.g0", x, fn);
        c->Add("sched+sp", y, fn);
      } else if (back_to_curg && x != *g0) {
        curg = x;
        c->Add("m.curg", x, fn);
        c->Add("sched+sp", y, fn);
      }
    } else if (curg && x == *curg && e.reg == fp_reg) {
      c->Add("sched+bp", y, fn);
    }
  }
}

// Compares of g with fields of its m, in code order, without m.g0's: systemstack checks
// gsignal, g0, curg (`CMPQ AX, m_gsignal(BX)` ... `CMPQ AX, m_curg(BX)`); morestack g0 then
// gsignal; nanotime1 first curg (`CMPQ g, m_curg(BX)`).
std::vector<int64_t> GCompares(const Events& ev, int64_t gm, int64_t g0) {
  std::vector<int64_t> xs;
  for (const Event& e : ev) {
    if (e.kind != EventKind::kCmp) continue;
    const Val* other = e.value == Named("g") ? &e.other : e.other == Named("g") ? &e.value : nullptr;
    std::string inner;
    int64_t x = 0;
    if (other && DerefOf(*other, &inner, &x) && IsM(inner, gm) && x != g0) xs.push_back(x);
  }
  return xs;
}

// The caller's state saved in g.sched: SP-based value -> sched+sp, the return address ->
// sched+pc, the caller's frame pointer -> sched+bp; morestack on arm64 also saves the caller's
// LR (passed in R3) -> sched+lr; gosave_systemstack_switch saves a fixed pc (systemstack_switch+8).
void RuleSchedStores(const std::string& fn, const Events& ev, bool arm64, Collector* c) {
  for (const Event& e : ev) {
    if (e.kind != EventKind::kStore || e.size != 8 || e.addr.base != "g") continue;
    const Val& v = e.value;
    if (asmtrace::IsStackBase(v.base)) c->Add("sched+sp", e.addr.off, fn);
    else if (v == Named("ret")) c->Add("sched+pc", e.addr.off, fn);
    else if (v == Named("fp0")) c->Add("sched+bp", e.addr.off, fn);
    else if (arm64 && fn == "runtime.morestack" && v == Named("arg3")) c->Add("sched+lr", e.addr.off, fn);
    else if (fn == "gosave_systemstack_switch" && v.IsConst() && v.off != 0) c->Add("sched+pc", e.addr.off, fn);
  }
}

// gogo<> restores a gobuf (pointer "buf"): SP, BP/R29, LR (arm64) from its fields, then jumps
// to gobuf.pc.
void RuleGogo(const std::string& fn, const Events& ev, int fp_reg, int lr_reg, Collector* c) {
  for (const Event& e : ev) {
    std::string inner;
    int64_t off = 0;
    if (!DerefOf(e.value, &inner, &off) || inner != "buf") continue;
    if (e.kind == EventKind::kJumpIndirect) c->Add("gobuf.pc", off, fn);
    if (e.kind != EventKind::kRegWrite) continue;
    if (e.reg == asmtrace::kSP) c->Add("gobuf.sp", off, fn);
    else if (e.reg == fp_reg) c->Add("gobuf.bp", off, fn);
    else if (e.reg == lr_reg && lr_reg >= 0) c->Add("gobuf.lr", off, fn);
  }
}

// nanotime1 saves its caller's pc and sp for the unwinder: `MOVQ CX, m_vdsoPC(BX)` (the return
// address), `MOVQ DX, m_vdsoSP(BX)` (an SP-based value).
void RuleVdso(const std::string& fn, const Events& ev, int64_t gm, Collector* c) {
  const std::string m = "[g+" + std::to_string(gm) + "]";
  for (const Event& e : ev) {
    if (e.kind != EventKind::kStore || e.size != 8 || e.addr.base != m) continue;
    if (e.value == Named("ret")) c->Add("m.vdsoPC", e.addr.off, fn);
    else if (asmtrace::IsStackBase(e.value.base)) c->Add("m.vdsoSP", e.addr.off, fn);
  }
}

// rt0_go sets up g0's stack at a fixed address: stackguard0, stackguard1 and stack.lo get
// SP-64KiB(+k), stack.hi gets SP (`MOVQ BX, (g_stack+stack_lo)(DI); MOVQ SP, (g_stack+stack_hi)(DI)`).
void RuleRt0(const std::string& fn, const Events& ev, Collector* c) {
  std::vector<const Event*> st;
  for (const Event& e : ev) {
    if (e.kind != EventKind::kStore || e.size != 8 || e.addr.base.size() < 2 || e.addr.base[0] != '#') continue;
    if (!asmtrace::IsStackBase(e.value.base)) continue;
    if (!st.empty() && (e.addr.base != st[0]->addr.base || e.value.base != st[0]->value.base)) continue;
    st.push_back(&e);
  }
  if (st.size() < 2) return;
  int64_t vmax = st[0]->value.off;
  for (const Event* e : st) vmax = std::max(vmax, e->value.off);
  size_t hi = 0;
  while (st[hi]->value.off != vmax) hi++;
  if (hi == 0 || vmax - st[hi - 1]->value.off < 4096) return;
  c->Add("g.stack.hi", st[hi]->addr.off, fn);
  c->Add("g.stack.lo", st[hi - 1]->addr.off, fn);
}

// goroutineheader(gp): `gpstatus := readgstatus(gp)` is its first 4-byte load from gp, and
// `print("goroutine ", gp.goid)` passes gp.goid to runtime.printuint (printint before Go 1.20,
// when goid was an int64).
void RuleGoroutineHeader(const std::string& fn, const Events& ev,
                         const std::function<std::string(uint64_t)>& name_at, Collector* c) {
  bool status = false, goid = false;
  for (const Event& e : ev) {
    if (!status && e.kind == EventKind::kLoad && e.size == 4 && e.addr.base == "arg0") {
      c->Add("g.atomicstatus", e.addr.off, fn);
      status = true;
    }
    if (!goid && e.kind == EventKind::kCall && e.target != 0 && name_at && (name_at(e.target) == "runtime.printuint" || name_at(e.target) == "runtime.printint")) {
      std::string inner;
      int64_t off = 0;
      if (DerefOf(e.value, &inner, &off) && inner == "arg0") c->Add("g.goid", off, fn);
      goid = true;
    }
  }
}

// arm64 save_g / load_g: `MOVB runtime·iscgo(SB), R0; CBZ R0, nocgo; MRS TPIDR_EL0, R0;
// MOVD $runtime·tls_g(SB), R27; MOVD g, (R0)(R27)`: the TPIDR_EL0-relative slot, and the
// address of the byte iscgo (its only 1-byte load from a fixed address).
void RuleArm64Tls(const std::string& fn, const Events& ev, Collector* c, std::map<uint64_t, std::string>* iscgo) {
  for (const Event& e : ev) {
    if ((e.kind == EventKind::kLoad || e.kind == EventKind::kStore) && e.addr.base == "tp")
      c->Add("tls_g", e.addr.off, fn);
    if (e.kind == EventKind::kLoad && e.size == 1 && e.addr.base.size() > 1 && e.addr.base[0] == '#') {
      uint64_t addr = std::stoull(e.addr.base.substr(1), nullptr, 16) + static_cast<uint64_t>(e.addr.off);
      auto& fns = (*iscgo)[addr];
      fns += (fns.empty() ? "" : ",") + fn;
    }
  }
}

// runtime/pprof.runtime_setProfLabel / runtime_getProfLabel (runtime/proflabel.go, linknamed
// into runtime/pprof; in every release 1.19-1.27 `getg().labels = labels` / `return
// getg().labels`): their 8-byte access to g is g.labels. Go 1.19 stores straight to [g+X]; 1.21+
// first loads the old value [g+X] for the buffered write barrier. Accesses to g's first four
// words (stack bounds, stack guards: the prologue's stack check) are not it. Only binaries that
// link runtime/pprof have these functions, and only they can have labels.
void RuleProfLabel(const std::string& fn, const Events& ev, Collector* c) {
  for (const Event& e : ev) {
    if ((e.kind == EventKind::kLoad || e.kind == EventKind::kStore) && e.size == 8 && e.addr.base == "g" &&
        e.addr.off >= 32) {
      c->Add("g.labels", e.addr.off, fn);
      return;
    }
  }
}

constexpr const char* kSetProfLabelFn = "runtime/pprof.runtime_setProfLabel";
constexpr const char* kGetProfLabelFn = "runtime/pprof.runtime_getProfLabel";

}  // namespace

const std::vector<std::string>& AsmOffsetFunctions() {
  static const std::vector<std::string> kFns = {
      "runtime.mcall",  "runtime.systemstack", "runtime.morestack",       "gosave_systemstack_switch",
      "gogo",           "runtime.nanotime1",   "runtime.rt0_go",          "runtime.goroutineheader",
      "runtime.save_g", "runtime.load_g", kSetProfLabelFn, kGetProfLabelFn};
  return kFns;
}

AsmOffsets DeriveOffsetsFromCode(sym::Arch arch, const std::vector<FuncCode>& funcs,
                                 const std::function<std::string(uint64_t)>& name_at) {
  AsmOffsets out;
  if (arch != sym::Arch::kAmd64 && arch != sym::Arch::kArm64) return out;
  const bool arm64 = arch == sym::Arch::kArm64;
  std::map<std::string, Events> ev;
  for (const FuncCode& f : funcs) {
    bool go_code = f.name == "runtime.goroutineheader" || f.name == kSetProfLabelFn || f.name == kGetProfLabelFn;
    asmtrace::TraceConfig cfg = arm64 ? Arm64Config(go_code) : Amd64Config(go_code);
    cfg.no_return = [&name_at](uint64_t target) { return name_at && NoReturn(name_at(target)); };
    if (f.name == "gogo") cfg.regs.push_back({arm64 ? 5 : Amd64ArgReg(1), Named("buf")});
    std::string_view code = f.bytes.substr(0, kMaxFunctionBytes);
    auto insns = arm64 ? LiftArm64(code, f.entry) : LiftAmd64(code, f.entry);
    ev[f.name] = asmtrace::Trace(insns, cfg);
  }
  for (const auto& name : AsmOffsetFunctions()) {
    bool arm64_only = name == "runtime.save_g" || name == "runtime.load_g";
    if (name == kSetProfLabelFn || name == kGetProfLabelFn) continue;  // optional: present only with runtime/pprof
    if (!ev.count(name) && (arm64 || !arm64_only)) out.missing_functions.push_back(name);
  }
  Collector c;
  const int fp_reg = arm64 ? 29 : 5;
  const int lr_reg = arm64 ? 30 : -1;
  for (const char* fn : {"runtime.mcall", "runtime.systemstack", "runtime.morestack", "runtime.nanotime1"})
    if (ev.count(fn)) RuleGM(fn, ev[fn], &c);
  if (auto gm = c.Get("g.m")) {
    for (const char* fn : {"runtime.mcall", "runtime.morestack"})
      if (ev.count(fn)) RuleSwitchSp(fn, ev[fn], *gm, false, fp_reg, &c);
    if (ev.count("runtime.systemstack"))
      RuleSwitchSp("runtime.systemstack", ev["runtime.systemstack"], *gm, true, fp_reg, &c);
    if (auto g0 = c.Get("m.g0")) {
      if (ev.count("runtime.systemstack")) {
        auto xs = GCompares(ev["runtime.systemstack"], *gm, *g0);
        if (xs.size() >= 2 && xs.front() != xs.back()) {
          c.Add("m.gsignal", xs.front(), "runtime.systemstack");
          c.Add("m.curg", xs.back(), "runtime.systemstack");
        }
      }
      if (ev.count("runtime.morestack")) {
        auto xs = GCompares(ev["runtime.morestack"], *gm, *g0);
        if (!xs.empty()) c.Add("m.gsignal", xs.front(), "runtime.morestack");
      }
      if (ev.count("runtime.nanotime1")) {
        auto xs = GCompares(ev["runtime.nanotime1"], *gm, *g0);
        if (!xs.empty()) c.Add("m.curg", xs.front(), "runtime.nanotime1");
      }
    }
    if (ev.count("runtime.nanotime1")) RuleVdso("runtime.nanotime1", ev["runtime.nanotime1"], *gm, &c);
  }
  for (const char* fn : {"runtime.mcall", "gosave_systemstack_switch", "runtime.morestack"})
    if (ev.count(fn)) RuleSchedStores(fn, ev[fn], arm64, &c);
  if (ev.count("gogo")) RuleGogo("gogo", ev["gogo"], fp_reg, lr_reg, &c);
  if (ev.count("runtime.rt0_go")) RuleRt0("runtime.rt0_go", ev["runtime.rt0_go"], &c);
  if (ev.count("runtime.goroutineheader"))
    RuleGoroutineHeader("runtime.goroutineheader", ev["runtime.goroutineheader"], name_at, &c);
  for (const char* fn : {kSetProfLabelFn, kGetProfLabelFn})
    if (ev.count(fn)) RuleProfLabel(fn, ev[fn], &c);

  // g.sched from each saved field minus its gobuf offset: all must give the same number.
  struct Part {
    const char* sum;
    const char* field;
  };
  for (const Part& p : {Part{"sched+sp", "gobuf.sp"}, Part{"sched+pc", "gobuf.pc"}, Part{"sched+bp", "gobuf.bp"},
                        Part{"sched+lr", "gobuf.lr"}}) {
    auto sum = c.Get(p.sum);
    auto field = c.Get(p.field);
    if (!sum || !field) continue;
    for (const auto& fn : c.Functions(p.sum)) c.Add("g.sched", *sum - *field, fn);
    c.Add("g.sched", *sum - *field, "gogo");
  }

  std::map<uint64_t, std::string> iscgo;
  if (arm64) {
    for (const char* fn : {"runtime.save_g", "runtime.load_g"})
      if (ev.count(fn)) RuleArm64Tls(fn, ev[fn], &c, &iscgo);
  }
  c.Finish(&out);
  if (auto it = out.fields.find("tls_g"); it != out.fields.end()) {
    out.arm64_tls_g_offset = it->second;
    out.fields.erase(it);
  }
  if (iscgo.size() == 1) {
    out.iscgo_address = AsmFact{static_cast<int64_t>(iscgo.begin()->first), "asm:" + iscgo.begin()->second};
  } else if (iscgo.size() > 1) {
    std::string s = "iscgo address:";
    for (const auto& [addr, fns] : iscgo) s += " " + Hex(addr) + " (" + fns + ")";
    out.conflicts.push_back(s);
  }
  return out;
}

AsmOffsets DeriveOffsetsFromAsm(const sym::Binary& bin) {
  const sym::GoPclntab* go = bin.go();
  if (go == nullptr) return AsmOffsets{};
  std::vector<FuncCode> funcs;
  for (const auto& name : AsmOffsetFunctions()) {
    auto fn = go->FindFuncByName(name);
    if (!fn || fn->end <= fn->entry) continue;
    size_t len = static_cast<size_t>(std::min<uint64_t>(fn->end - fn->entry, kMaxFunctionBytes));
    auto code = bin.elf().ReadVaddr(fn->entry, len);
    if (!code.ok()) continue;
    funcs.push_back(FuncCode{name, fn->entry, *code});
  }
  auto name_at = [go](uint64_t pc) -> std::string {
    auto f = go->FindFunc(pc);
    if (!f || f->entry != pc) return "";
    return std::string(f->name);
  };
  return DeriveOffsetsFromCode(bin.elf().arch(), funcs, name_at);
}

}  // namespace sb::unwinder
