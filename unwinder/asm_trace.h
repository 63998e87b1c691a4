// Symbolic tracing of one small machine-code function, independent of the architecture: the
// amd64 and arm64 lifters (asm_offsets_amd64.cc, asm_offsets_arm64.cc) turn instructions into
// the few operations below, and the tracer follows what each register holds as an expression of
// the function's inputs ("g", "sp", "ret", "arg0", "[g+48]" = the word at g+48, "#..." = a
// constant). It records every memory access, compare, call and write of SP/FP/LR with those
// expressions, so the rules in asm_offsets.cc can read struct offsets off them ("the word at
// [[g+48]+0] + 56 becomes SP": m.g0 = 0, g0.sched.sp = 56) without caring how each Go release
// or architecture spelled the instructions. Control flow is followed to a fixed point: at a
// join, a register keeps its expression only if every path agrees.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sb::unwinder::asmtrace {

// Register numbers shared by both lifters: 0..30 general registers (amd64: RAX..R15 in
// encoding order, RSP excluded), then these.
constexpr int kSP = 32;
constexpr int kZR = 33;   // arm64 zero register: reads 0, writes vanish
constexpr int kTmp = 34;  // a scratch the lifters use for memory operands of compares
constexpr int kNumRegs = 35;

// An expression: "" unknown, "#" a constant (off), "#<hex>" a constant address used as a base,
// a named input ("g", "sp", "fp0", "ret", "argN", "tp"), or "[B+k]" the word at B+k.
struct Val {
  std::string base;
  int64_t off = 0;
  bool known() const { return !base.empty(); }
  bool IsConst() const { return base == "#"; }
  bool operator==(const Val& o) const { return base == o.base && off == o.off; }
  bool operator!=(const Val& o) const { return !(*this == o); }
  std::string ToString() const;
};

Val Named(const std::string& name, int64_t off = 0);
Val Const(int64_t v);
// The word at address a: "[base+off]".
Val Deref(const Val& a);
// Splits "[B+k]" (with off 0) into B and k. False for anything else.
bool SplitDeref(const Val& v, std::string* inner, int64_t* off);
// "sp", "sp@..." (a stack pointer the function realigned or reloaded).
bool IsStackBase(const std::string& base);

enum class OpKind {
  kLoad,          // dst = [base + index + imm], size bytes
  kStore,         // [base + index + imm] = src (src -1: the constant imm2)
  kMov,           // dst = src
  kAddImm,        // dst = src + imm
  kConst,         // dst = imm
  kMovK,          // dst = dst with imm (16 bits) inserted at bit `size`
  kClobber,       // dst = unknown
  kCmp,           // compare src with dst (no write)
  kTlsLoad,       // dst = the thread's g slot (amd64 FS-relative)
  kTlsStore,      // the thread's g slot = src
  kTpidr,         // dst = TPIDR_EL0
  kCall,          // direct call to target
  kCallIndirect,  // call through src
  kJump,          // to target
  kJumpIndirect,  // through src: ends the path
  kCondJump,      // to target or fall through
  kStop,          // RET, trap, padding: ends the path
};

struct Op {
  OpKind kind = OpKind::kClobber;
  int dst = -1;
  int src = -1;
  int base = -1;
  int index = -1;
  int64_t imm = 0;
  int64_t imm2 = 0;
  int size = 8;
  uint64_t target = 0;
};

struct Insn {
  uint64_t pc = 0;
  uint32_t length = 0;
  std::vector<Op> ops;
};

enum class EventKind { kLoad, kStore, kCmp, kRegWrite, kCall, kJumpIndirect, kTlsStore };

struct Event {
  EventKind kind = EventKind::kLoad;
  uint64_t pc = 0;
  int size = 0;
  int reg = -1;     // kLoad: destination; kRegWrite: kSP or the arch's fp/lr register
  Val addr;         // kLoad/kStore
  Val value;        // kStore: stored value; kCmp: one side; kRegWrite/kTlsStore: new value;
                    // kCall: first argument register; kJumpIndirect: target
  Val other;        // kCmp: the other side
  uint64_t target = 0;  // kCall
};

struct TraceConfig {
  bool go_code = false;  // compiler output: a call clobbers every register but SP, FP and g
  int fp_reg = -1;
  int lr_reg = -1;       // arm64 x30
  int g_reg = -1;
  int arg_reg = 0;       // first argument / result register (AX, X0)
  std::vector<std::pair<int, Val>> regs;         // register values at entry
  std::vector<std::pair<int64_t, Val>> stack;    // [sp+k] at entry
  Val tls;                                       // the TLS g slot at entry
  // Direct call targets that never return (runtime.throw, panics): the path ends there
  // instead of running into the code the compiler placed after the call.
  std::function<bool(uint64_t)> no_return;
};

// Follows the function; a jump back to the entry (the morestack call in every Go prologue
// re-runs the function with the same arguments) is not a new path. Events come in address order, each instruction once (with the
// register contents every path into it agrees on). Bounded: at most `max_steps` evaluations.
std::vector<Event> Trace(const std::vector<Insn>& code, const TraceConfig& cfg, int max_steps = 200000);

}  // namespace sb::unwinder::asmtrace
