#include "unwinder/asm_trace.h"

#include <array>
#include <cstdio>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>

namespace sb::unwinder::asmtrace {

std::string Val::ToString() const {
  if (base.empty()) return "?";
  if (base == "#") return "$" + std::to_string(off);
  if (off == 0) return base;
  return base + (off > 0 ? "+" : "") + std::to_string(off);
}

Val Named(const std::string& name, int64_t off) { return Val{name, off}; }
Val Const(int64_t v) { return Val{"#", v}; }

Val Deref(const Val& a) {
  if (!a.known()) return Val{};
  // Bound the expression size: deeper chains than a few loads never matter to the rules, and
  // arbitrary input (fuzzing) must not grow strings without limit.
  if (a.base.size() > 200) return Val{};
  return Val{"[" + a.base + "+" + std::to_string(a.off) + "]", 0};
}

bool SplitDeref(const Val& v, std::string* inner, int64_t* off) {
  const std::string& s = v.base;
  if (v.off != 0 || s.size() < 4 || s.front() != '[' || s.back() != ']') return false;
  int depth = 0;
  size_t plus = std::string::npos;
  for (size_t i = 1; i + 1 < s.size(); i++) {
    if (s[i] == '[') depth++;
    else if (s[i] == ']') depth--;
    else if (s[i] == '+' && depth == 0) plus = i;
  }
  if (plus == std::string::npos) return false;
  *inner = s.substr(1, plus - 1);
  try {
    *off = std::stoll(s.substr(plus + 1, s.size() - plus - 2));
  } catch (...) {
    return false;
  }
  return true;
}

bool IsStackBase(const std::string& base) { return base == "sp" || base.rfind("sp@", 0) == 0; }

namespace {

struct State {
  std::array<Val, kNumRegs> r;
  std::map<std::pair<std::string, int64_t>, Val> stack;  // words stored at stack addresses
  Val tls;
};

bool Same(const State& a, const State& b) { return a.r == b.r && a.stack == b.stack && a.tls == b.tls; }

// Keeps what both states agree on.
State Meet(const State& a, const State& b) {
  State m;
  for (int i = 0; i < kNumRegs; i++) m.r[i] = a.r[i] == b.r[i] ? a.r[i] : Val{};
  for (const auto& [k, v] : a.stack) {
    auto it = b.stack.find(k);
    if (it != b.stack.end() && it->second == v) m.stack[k] = v;
  }
  m.tls = a.tls == b.tls ? a.tls : Val{};
  return m;
}

std::string Hex(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof(buf), "#%llx", static_cast<unsigned long long>(v));
  return buf;
}

Event MakeEvent(EventKind kind, uint64_t pc) {
  Event e;
  e.kind = kind;
  e.pc = pc;
  return e;
}

class Tracer {
 public:
  Tracer(const TraceConfig& cfg, std::vector<Event>* events) : cfg_(cfg), events_(events) {}

  Val Get(const State& s, int reg) const {
    if (reg == kZR) return Const(0);
    if (reg < 0 || reg >= kNumRegs) return Val{};
    return s.r[reg];
  }

  void Set(State* s, int reg, Val v, uint64_t pc) {
    if (reg < 0 || reg >= kNumRegs || reg == kZR) return;
    if (reg == kSP && !v.known()) v = Val{"sp@" + std::to_string(pc), 0};  // realigned: a new base
    s->r[reg] = v;
    if (events_ && (reg == kSP || reg == cfg_.fp_reg || reg == cfg_.lr_reg)) {
      Event e = MakeEvent(EventKind::kRegWrite, pc);
      e.reg = reg;
      e.value = v;
      events_->push_back(e);
    }
  }

  // The address base + index + imm. A constant base becomes a named base ("#<hex>") so that
  // rules can tell a struct at a fixed address from its field offset.
  Val Address(const State& s, const Op& op) const {
    Val b = Get(s, op.base);
    if (!b.known()) return Val{};
    int64_t extra = op.imm;
    if (op.index >= 0) {
      Val i = Get(s, op.index);
      if (!i.IsConst()) return Val{};
      extra += i.off;
    }
    if (b.IsConst()) return Val{Hex(static_cast<uint64_t>(b.off)), extra};
    return Val{b.base, b.off + extra};
  }

  // Returns false when the path ends here.
  bool Apply(State* s, const Op& op, uint64_t pc) {
    switch (op.kind) {
      case OpKind::kLoad: {
        Val a = Address(*s, op);
        Val v = Deref(a);
        if (a.known() && IsStackBase(a.base)) {
          auto it = s->stack.find({a.base, a.off});
          if (it != s->stack.end() && op.size == 8) v = it->second;
        }
        if (events_) {
          Event e = MakeEvent(EventKind::kLoad, pc);
          e.size = op.size;
          e.reg = op.dst;
          e.addr = a;
          events_->push_back(e);
        }
        Set(s, op.dst, v, pc);
        return true;
      }
      case OpKind::kStore: {
        Val a = Address(*s, op);
        Val v = op.src >= 0 ? Get(*s, op.src) : Const(op.imm2);
        if (a.known() && IsStackBase(a.base)) {
          if (op.size == 8 && v.known()) s->stack[{a.base, a.off}] = v;
          else s->stack.erase({a.base, a.off});
        } else if (!a.known()) {
          s->stack.clear();  // could be anywhere on the stack
        }
        if (events_) {
          Event e = MakeEvent(EventKind::kStore, pc);
          e.size = op.size;
          e.addr = a;
          e.value = v;
          events_->push_back(e);
        }
        return true;
      }
      case OpKind::kMov: Set(s, op.dst, Get(*s, op.src), pc); return true;
      case OpKind::kAddImm: {
        Val v = Get(*s, op.src);
        if (v.known()) v.off += op.imm;
        Set(s, op.dst, v, pc);
        return true;
      }
      case OpKind::kConst: Set(s, op.dst, Const(op.imm), pc); return true;
      case OpKind::kMovK: {
        Val v = Get(*s, op.dst);
        if (v.IsConst() && op.size >= 0 && op.size < 64) {
          uint64_t mask = 0xffffull << op.size;
          v.off = static_cast<int64_t>((static_cast<uint64_t>(v.off) & ~mask) |
                                       ((static_cast<uint64_t>(op.imm) << op.size) & mask));
        } else {
          v = Val{};
        }
        Set(s, op.dst, v, pc);
        return true;
      }
      case OpKind::kClobber: Set(s, op.dst, Val{}, pc); return true;
      case OpKind::kCmp:
        if (events_) {
          Event e = MakeEvent(EventKind::kCmp, pc);
          e.value = Get(*s, op.src);
          e.other = Get(*s, op.dst);
          events_->push_back(e);
        }
        return true;
      case OpKind::kTlsLoad: Set(s, op.dst, s->tls, pc); return true;
      case OpKind::kTlsStore:
        s->tls = op.src >= 0 ? Get(*s, op.src) : Const(op.imm2);
        if (events_) {
          Event e = MakeEvent(EventKind::kTlsStore, pc);
          e.value = s->tls;
          events_->push_back(e);
        }
        return true;
      case OpKind::kTpidr: Set(s, op.dst, Named("tp"), pc); return true;
      case OpKind::kCall:
      case OpKind::kCallIndirect: {
        if (events_) {
          Event e = MakeEvent(EventKind::kCall, pc);
          e.target = op.kind == OpKind::kCall ? op.target : 0;
          e.value = Get(*s, cfg_.arg_reg);
          events_->push_back(e);
        }
        // Hand-written runtime assembly documents what its direct callees clobber and relies
        // on the rest; compiled Go and indirect calls keep only SP, FP and g.
        if (op.kind == OpKind::kCall && cfg_.no_return && cfg_.no_return(op.target)) return false;
        if (cfg_.go_code || op.kind == OpKind::kCallIndirect) {
          for (int i = 0; i < kNumRegs; i++) {
            if (i != kSP && i != cfg_.fp_reg && i != cfg_.g_reg) s->r[i] = Val{};
          }
        }
        return true;
      }
      case OpKind::kJumpIndirect:
        if (events_) {
          Event e = MakeEvent(EventKind::kJumpIndirect, pc);
          e.value = Get(*s, op.src);
          events_->push_back(e);
        }
        return false;
      case OpKind::kJump:
      case OpKind::kCondJump: return true;  // flow handled by the caller
      case OpKind::kStop: return false;
    }
    return true;
  }

 private:
  const TraceConfig& cfg_;
  std::vector<Event>* events_;
};

}  // namespace

std::vector<Event> Trace(const std::vector<Insn>& code, const TraceConfig& cfg, int max_steps) {
  std::vector<Event> events;
  if (code.empty()) return events;
  std::unordered_map<uint64_t, size_t> at;  // pc -> instruction index
  for (size_t i = 0; i < code.size(); i++) at.emplace(code[i].pc, i);

  State entry;
  entry.r[kSP] = Named("sp");
  for (const auto& [reg, v] : cfg.regs) {
    if (reg >= 0 && reg < kNumRegs) entry.r[reg] = v;
  }
  for (const auto& [off, v] : cfg.stack) entry.stack[{"sp", off}] = v;
  entry.tls = cfg.tls;

  std::vector<std::optional<State>> in(code.size());
  in[0] = entry;
  std::deque<size_t> work{0};
  std::vector<bool> queued(code.size(), false);
  queued[0] = true;
  Tracer quiet(cfg, nullptr);
  int steps = 0;
  auto flow = [&](size_t to, const State& s) {
    if (!in[to]) {
      in[to] = s;
    } else {
      State m = Meet(*in[to], s);
      if (Same(m, *in[to])) return;
      in[to] = std::move(m);
    }
    if (!queued[to]) {
      queued[to] = true;
      work.push_back(to);
    }
  };
  while (!work.empty() && steps++ < max_steps) {
    size_t i = work.front();
    work.pop_front();
    queued[i] = false;
    State s = *in[i];
    bool falls = true;
    std::optional<uint64_t> branch;
    for (const Op& op : code[i].ops) {
      if (!quiet.Apply(&s, op, code[i].pc)) falls = false;
      if (op.kind == OpKind::kJump) {
        branch = op.target;
        falls = false;
      } else if (op.kind == OpKind::kCondJump) {
        branch = op.target;
      }
    }
    if (branch) {
      auto it = at.find(*branch);
      if (it != at.end() && it->second != 0) flow(it->second, s);
    }
    if (falls && i + 1 < code.size()) flow(i + 1, s);
  }

  Tracer loud(cfg, &events);
  for (size_t i = 0; i < code.size(); i++) {
    if (!in[i]) continue;
    State s = *in[i];
    for (const Op& op : code[i].ops) {
      if (!loud.Apply(&s, op, code[i].pc)) break;
    }
  }
  return events;
}

}  // namespace sb::unwinder::asmtrace
