#include "coredump/replay/case_runner.h"
#include "base/hex.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "base/file_util.h"
#include "coredump/replay/core_slim.h"
#include "coredump/sparse_image.h"
#include "coredump/zstd_file.h"
#include "ebpf/unwind/host_unwind.h"

namespace sb::coredump {
namespace fs = std::filesystem;
namespace {

// FNV-1a 64: names blobs by content, so cases that share a binary share its blob.
uint64_t Fnv1a(std::string_view data) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); i++) out += (i ? sep : "") + v[i];
  return out;
}

// Binaries are extracted once into the cache (sparse files, shared by every case that uses
// them); the result is the local path to read.
Result<std::string> Extract(const fs::path& case_dir, const std::string& stored, const std::string& cache) {
  fs::path p = case_dir / stored;
  if (!fs::exists(p)) return MakeError("missing file " + p.string());
  if (p.extension() != ".zst") return p.string();
  return ExtractZstdFile(p.string(), cache);
}

// A case ready to replay: the core decompressed into memory with its zero pages as holes (never
// written to the scratch disk: 6.55 GiB of core holds ~250 MB that is not zero), binaries from
// the cache.
struct Prepared {
  std::unique_ptr<SparseImage> core;  // null when the stored core is not compressed
  ReplayInput in;
};

Result<Prepared> Prepare(const CoreCase& c, const fs::path& case_dir, const std::string& cache,
                         bool record_reads = false) {
  Prepared p;
  p.in.record_reads = record_reads;
  fs::path core = case_dir / c.core;
  if (!fs::exists(core)) return MakeError("missing file " + core.string());
  if (core.extension() == ".zst") {
    auto img = SparseImage::FromFile(core.string());
    if (!img.ok()) return img.take_error();
    p.core = std::move(*img);
    p.in.core_path = p.core->path();
  } else {
    p.in.core_path = core.string();
  }
  for (const auto& f : c.files) {
    auto local = Extract(case_dir, f.file, cache);
    if (!local.ok()) return local.take_error();
    p.in.files[f.path] = *local;
    if (f.role == "executable") p.in.executable = f.path;
  }
  if (p.in.executable.empty()) return MakeError("case " + c.name + " names no executable");
  for (const auto& f : c.faults) p.in.fault_addresses.insert(f.address);
  return p;
}

Result<ReplayResult> ReplayLoaded(const CoreCase& c, const fs::path& case_dir, const std::string& cache,
                                  bool record_reads = false) {
  auto p = Prepare(c, case_dir, cache, record_reads);
  if (!p.ok()) return p.take_error();
  return Replay(p->in);
}

Result<CoreCase> LoadCase(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.take_error();
  auto c = ParseCase(*text);
  if (!c.ok()) return MakeError(path + ": " + c.error());
  return c;
}

// with_labels: new cases, and rebased ones that had label expectations (older cases are
// rebased in their own format).
std::vector<CaseThread> ToExpectations(const ReplayResult& r, bool with_labels) {
  std::vector<CaseThread> out;
  for (const auto& t : r.threads)
    out.push_back(CaseThread{t.lwp, t.stop, t.crossed, t.frames, with_labels, with_labels ? t.labels : std::vector<std::string>{},
                             with_labels ? t.labels_status : ""});
  return out;
}

// "main.f+0x1c in main.go:12" / "main.g in main.go:5 (inlined)" -> "main.f" / "main.g".
std::string FunctionOf(const std::string& frame) {
  size_t end = frame.find(" in ");
  std::string f = frame.substr(0, end);
  size_t plus = f.rfind("+0x");
  return plus == std::string::npos ? f : f.substr(0, plus);
}

// Delve's `goroutines -t` blocks: "  Goroutine N - ..." then "\tK  0xADDR in FUNC" lines.
std::map<uint64_t, std::vector<std::string>> ParseDelveGoroutines(const std::string& text) {
  std::map<uint64_t, std::vector<std::string>> out;
  uint64_t cur = 0;
  bool in_block = false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    // A `thread N` / `stack` listing, or Delve's own crash report, ends a goroutine's block:
    // their frames belong to a thread, not to the goroutine listed last.
    if (line.rfind("Switched from", 0) == 0 || line.find("Internal debugger error") != std::string::npos) {
      in_block = false;
      continue;
    }
    size_t g = line.find("Goroutine ");
    if (g != std::string::npos && line.find(" - ") != std::string::npos) {
      cur = strtoull(line.c_str() + g + 10, nullptr, 10);
      in_block = out[cur].empty();  // the first listing that has frames wins
      continue;
    }
    size_t in = line.find(" in ");
    if (in_block && in != std::string::npos && line.find("0x") != std::string::npos && !line.empty() &&
        (line[0] == '\t' || line[0] == ' ')) {
      std::string fn = line.substr(in + 4);
      while (!fn.empty() && (fn.back() == ' ' || fn.back() == '\r')) fn.pop_back();
      out[cur].push_back(fn);
    }
  }
  for (auto it = out.begin(); it != out.end();) it = it->second.empty() ? out.erase(it) : std::next(it);
  return out;
}

// Frames that one side shows and the other does not, by construction rather than by error:
// Delve omits mcall/morestack (it starts from the goroutine's saved state), names systemstack's
// saved pc systemstack_switch, prefixes C functions with "C.", repeats the cgo wrapper after
// asmcgocall, shows "???" for the vDSO, and shows the vDSO's Go callers (time.now, nanotime1,
// walltime) that the vDSO recipe steps over (it continues at m.vdsoPC, their caller).
std::string NormalizeFrame(std::string f) {
  if (f.rfind("C.", 0) == 0) f = f.substr(2);
  if (f == "runtime.systemstack_switch") return "runtime.systemstack";
  if (f == "runtime.mcall" || f == "runtime.morestack" || f == "???" || f.rfind("_cgo_", 0) == 0 ||
      f.rfind("__vdso_", 0) == 0 || f == "time.now" || f == "runtime.nanotime1" || f == "runtime.walltime")
    return "";
  return f;
}

std::vector<std::string> Normalized(const std::vector<std::string>& in) {
  std::vector<std::string> out;
  for (const auto& f : in)
    if (auto n = NormalizeFrame(f); !n.empty()) out.push_back(n);
  return out;
}

// C calling Go: we follow cgocallback's real callers (crosscall2, the C frames on g0, back to
// asmcgocall), as Delve does where it can; where Delve instead follows cgocallback's fake frame
// to curg.sched.pc (systemstack_switch, then the Go code that called C; goexit on a C-created
// thread, the way Go's own traceback and gdb do), both sides keep cgocallback and resume at
// the Go frames that called C.
void AlignCgocallback(std::vector<std::string>* ours, std::vector<std::string>* theirs) {
  auto tcb = std::find(theirs->begin(), theirs->end(), "runtime.cgocallback");
  if (tcb == theirs->end() || tcb + 1 == theirs->end() ||
      (tcb[1] != "runtime.systemstack" && tcb[1] != "runtime.goexit"))
    return;
  theirs->erase(tcb + 1, tcb[1] == "runtime.goexit" ? theirs->end() : tcb + 2);
  auto cb = std::find(ours->begin(), ours->end(), "runtime.cgocallback");
  if (cb != ours->end()) {
    auto ac = std::find(cb, ours->end(), "runtime.asmcgocall");
    ours->erase(cb + 1, ac == ours->end() ? ac : ac + 1);
  }
}

constexpr size_t kDelveDepth = 64;  // tools/coredump asks Delve for `goroutines -t 64`

// Delve's `goroutines -l`: a goroutine's line is followed by `\tLabels: "k":"v", "k2":"v2"`
// when it has labels, with `... (N more)` after the fifth. Per goroutine listed: its labels as
// "k=v" (sorted), and whether Delve showed them all (no "more", every value under the 64 bytes
// Delve loads of a string). Empty when the output has no `goroutines -l` listing.
struct DelveLabels {
  std::vector<std::string> labels;
  bool complete = true;
};
std::map<uint64_t, DelveLabels> ParseDelveLabels(const std::string& text) {
  std::map<uint64_t, DelveLabels> out;
  if (text.find("#   goroutines -l") == std::string::npos) return out;
  size_t pos = text.find("\n  Goroutine ");
  // The first listing (plain `goroutines`) has no Labels lines; -l's ends at "[N goroutines]".
  for (; pos != std::string::npos; pos = text.find("\n", pos + 1)) {
    size_t eol = text.find('\n', pos + 1);
    std::string line = text.substr(pos + 1, eol == std::string::npos ? std::string::npos : eol - pos - 1);
    size_t g = line.find("Goroutine ");
    if (g == std::string::npos || line.find(" - ") == std::string::npos || line[0] == '\t') continue;
    uint64_t goid = strtoull(line.c_str() + g + 10, nullptr, 10);
    if (eol == std::string::npos) break;
    size_t next = text.find('\n', eol + 1);
    std::string lab = text.substr(eol + 1, next == std::string::npos ? std::string::npos : next - eol - 1);
    if (lab.rfind("\tLabels: ", 0) != 0) {
      out.emplace(goid, DelveLabels{});  // listed without labels (or a plain listing: same)
      continue;
    }
    DelveLabels d;
    d.complete = lab.find(" more)") == std::string::npos;
    // "k":"v" pairs, each string quoted (our workloads' labels need no escapes).
    std::vector<std::string> strs;
    for (size_t i = lab.find('"'); i != std::string::npos; i = lab.find('"', i + 1)) {
      size_t j = lab.find('"', i + 1);
      if (j == std::string::npos) break;
      strs.push_back(lab.substr(i + 1, j - i - 1));
      i = j;
    }
    for (size_t i = 0; i + 1 < strs.size(); i += 2) {
      if (strs[i + 1].size() >= 64) d.complete = false;
      d.labels.push_back(strs[i] + "=" + strs[i + 1]);
    }
    std::sort(d.labels.begin(), d.labels.end());
    out[goid] = std::move(d);  // the -l listing comes last and wins
  }
  return out;
}

}  // namespace

std::vector<std::string> CompareWithDelve(const ReplayResult& r, const std::string& dlv_text,
                                          std::vector<std::string>* mismatches) {
  std::vector<std::string> compared;
  auto gs = ParseDelveGoroutines(dlv_text);
  auto delve_labels = ParseDelveLabels(dlv_text);
  for (const auto& t : r.threads) {
    if (t.goid == 0) continue;
    auto it = gs.find(t.goid);
    if (it == gs.end()) continue;
    std::vector<std::string> raw;
    for (const auto& f : t.frames) raw.push_back(FunctionOf(f));
    std::string who = "lwp " + std::to_string(t.lwp) + " goroutine " + std::to_string(t.goid);
    if (!t.faults_hit.empty()) {
      compared.push_back(who + ": not compared (cut short by an injected fault)");
      continue;
    }
    auto sigtramp = std::find(raw.begin(), raw.end(), "runtime.sigtramp");
    if (sigtramp != raw.end() && !it->second.empty() &&
        std::find(raw.begin(), sigtramp + 1, NormalizeFrame(it->second[0])) != sigtramp + 1) {
      // Delve 1.20 starts such a listing in the handler and stops there ("error while reading
      // spliced memory"); gdb, which unwinds through the signal frame, is the oracle for these
      // threads (--gdb). A listing that starts in the interrupted context (the runtime's own
      // traceback) is compared.
      compared.push_back(who + ": not compared (in a signal handler: Delve does not unwind the signal frame)");
      continue;
    }
    auto ours = Normalized(raw);
    auto theirs = Normalized(it->second);
    // Delve sometimes continues a parked goroutine's listing with its M's g0 frames after
    // goexit; a goroutine's frames end at goexit.
    if (auto g = std::find(theirs.begin(), theirs.end(), "runtime.goexit"); g != theirs.end())
      theirs.erase(g + 1, theirs.end());
    AlignCgocallback(&ours, &theirs);
    bool truncated = it->second.size() >= kDelveDepth;
    // Delve puts the thread's current frame on top of a stack it takes from the goroutine's
    // saved state (skipping the g0 frames between): drop that stitched frame.
    if (theirs.size() > 1 && !ours.empty() && theirs[0] == ours[0] && (ours.size() < 2 || theirs[1] != ours[1]))
      theirs.erase(theirs.begin());
    bool equal = false;
    if (!theirs.empty()) {
      auto at = std::find(ours.begin(), ours.end(), theirs[0]);
      size_t p = static_cast<size_t>(at - ours.begin());
      size_t n = std::min(theirs.size(), ours.size() - std::min(p, ours.size()));
      bool agree = at != ours.end() && std::equal(theirs.begin(), theirs.begin() + n, ours.begin() + p);
      if (truncated && t.stop != "root" && p + n == ours.size())  // ours stopped on purpose first
        equal = agree && n >= 1;
      else if (truncated)  // Delve shows only its first 64: all of them agree
        equal = agree && n == theirs.size();
      else if (t.stop == "root")  // a whole stack: all of Delve's frames, and nothing after them
        equal = agree && n == theirs.size() && p + n == ours.size();
      else  // stopped early on purpose: what we have agrees with Delve
        equal = agree && n >= 1 && p + n == ours.size();
    }
    // The goroutine's labels, where Delve listed them (`goroutines -l`): all of them equal, or
    // the ones Delve shows are ours and ours are at least as many.
    std::string labels_note;
    if (auto dl = delve_labels.find(t.goid); dl != delve_labels.end()) {
      const auto& want = dl->second.labels;
      bool same = dl->second.complete ? t.labels == want
                                      : want.size() <= t.labels.size() &&
                                            std::all_of(want.begin(), want.end(), [&](const std::string& kv) {
                                              // a cut value: ours starts with what Delve shows
                                              size_t eq = kv.find('=');
                                              return std::any_of(t.labels.begin(), t.labels.end(), [&](const std::string& o) {
                                                return o.compare(0, kv.size(), kv) == 0 && o.size() > eq;
                                              });
                                            });
      if (!same)
        mismatches->push_back(who + ": labels [" + Join(t.labels, ",") + "], Delve [" + Join(want, ",") + "]");
      labels_note = want.empty() ? "; no labels, as Delve" : "; labels " + Join(want, ",") + " as Delve";
    }
    if (equal) {
      compared.push_back(who + ": frames agree with Delve's" + (truncated ? " (Delve shows 64)" : "") +
                         (t.stop == "root" ? "" : " as far as ours go (" + t.stop + ")") + labels_note);
    } else {
      mismatches->push_back(who + ": ours [" + Join(ours, " <- ") + "], Delve [" + Join(theirs, " <- ") + "]");
    }
  }
  return compared;
}

namespace {

// gdb's `thread apply all bt`: "Thread N (... (LWP X) ...):" then "#K [0xADDR in ]NAME (...)".
std::map<uint32_t, std::vector<std::string>> ParseGdbBacktraces(const std::string& text) {
  std::map<uint32_t, std::vector<std::string>> out;
  uint32_t lwp = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.rfind("Thread ", 0) == 0) {
      size_t l = line.find("(LWP ");
      lwp = l == std::string::npos ? 0 : static_cast<uint32_t>(strtoul(line.c_str() + l + 5, nullptr, 10));
      continue;
    }
    if (lwp == 0 || line.empty() || line[0] != '#') continue;
    size_t name_at = line.find(" in ");
    name_at = name_at == std::string::npos ? line.find_first_not_of(' ', line.find(' ')) : name_at + 4;
    if (name_at == std::string::npos) continue;
    std::string name = line.substr(name_at, line.find(' ', name_at) - name_at);
    out[lwp].push_back(name);
  }
  return out;
}

bool EndsNativePart(const std::string& f) {
  static const char* kStops[] = {"runtime.mcall",   "runtime.systemstack", "runtime.asmcgocall",
                                 "runtime.morestack", "runtime.mstart",     "runtime.goexit",
                                 "runtime.rt0_go",  "runtime.cgocallback", "??"};
  for (const char* s : kStops)
    if (f == s) return true;
  return false;
}

}  // namespace

std::vector<std::string> CompareWithGdb(const ReplayResult& r, const std::string& gdb_bt,
                                        std::vector<std::string>* mismatches) {
  std::vector<std::string> compared;
  auto bts = ParseGdbBacktraces(gdb_bt);
  for (const auto& t : r.threads) {
    auto it = bts.find(t.lwp);
    if (it == bts.end()) continue;
    // The vDSO exports each function under two names; the vDSO recipe continues at m.vdsoPC,
    // stepping over the vDSO's Go caller (time.now, nanotime1, walltime), by design.
    auto vdso_name = [](std::string f) { return f.rfind("__vdso_", 0) == 0 ? f.substr(7) : f; };
    std::vector<std::string> theirs;
    bool in_vdso = false;
    for (const auto& f : it->second) {
      if (f == "??") break;
      // "<signal handler called>": gdb crossed the signal frame (after runtime.sigtramp) into
      // the interrupted context, as the signal crossing does; the marker is not a frame.
      if (f.rfind("<signal", 0) == 0) continue;
      if (in_vdso && (f == "time.now" || f == "runtime.nanotime1" || f == "runtime.walltime")) break;
      in_vdso = f == "clock_gettime" || f.rfind("__vdso_", 0) == 0;
      theirs.push_back(vdso_name(f));
      if (EndsNativePart(f)) break;
    }
    std::vector<std::string> ours;
    for (size_t i = 0; i < t.frames.size() && i < theirs.size(); i++)
      ours.push_back(vdso_name(FunctionOf(t.frames[i])));
    std::string who = "lwp " + std::to_string(t.lwp);
    if (!theirs.empty() && ours == theirs) {
      compared.push_back(who + ": " + std::to_string(theirs.size()) + " frames equal gdb's");
    } else if (t.faults_hit.empty()) {
      mismatches->push_back(who + ": ours [" + Join(ours, " <- ") + "], gdb [" + Join(theirs, " <- ") + "]");
    }
  }
  return compared;
}

std::vector<std::string> FindCases(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  // Cases sit at the top of the directory (subfolders hold blobs and capture staging).
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file() && it->path().extension() == ".json") out.push_back(it->path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<ReplayResult> ReplayCase(const std::string& case_json, const std::string& cache, CoreCase* loaded,
                                bool record_reads) {
  auto c = LoadCase(case_json);
  if (!c.ok()) return c.take_error();
  if (loaded) *loaded = *c;
  return ReplayLoaded(*c, fs::path(case_json).parent_path(), cache, record_reads);
}

Result<CaseReport> CheckCase(const std::string& case_json, const std::string& cache) {
  auto c = LoadCase(case_json);
  if (!c.ok()) return c.take_error();
  fs::path dir = fs::path(case_json).parent_path();
  auto t_load = std::chrono::steady_clock::now();
  auto p = Prepare(*c, dir, cache);
  if (!p.ok()) return p.take_error();
  // One replay, timed (it used to run twice, the first to extract): everything is decompressed
  // by now, so this is the replay alone, with the first touch of each page it reads.
  auto t0 = std::chrono::steady_clock::now();
  auto r = Replay(p->in);
  if (!r.ok()) return r.take_error();
  CaseReport rep;
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  rep.replay_ms = ms(t0, std::chrono::steady_clock::now());
  rep.load_ms = ms(t_load, t0);
  if (p->core) rep.core_bytes = p->core->stats().size, rep.core_stored_bytes = p->core->stats().stored;
  rep.name = c->name;
  rep.arch = c->arch;
  rep.go_version = c->go_version;
  rep.threads = c->threads.size();
  std::map<uint32_t, const ReplayedThread*> got;
  for (const auto& t : r->threads) got[t.lwp] = &t;
  for (const auto& want : c->threads) {
    auto it = got.find(want.lwp);
    std::string who = "lwp " + std::to_string(want.lwp) + ": ";
    if (it == got.end()) {
      rep.differences.push_back(who + "thread missing from the core");
      continue;
    }
    const ReplayedThread& t = *it->second;
    if (t.stop != want.stop) rep.differences.push_back(who + "stop " + t.stop + ", expected " + want.stop);
    if (t.crossed != want.crossed)
      rep.differences.push_back(who + "crossed [" + Join(t.crossed, ",") + "], expected [" + Join(want.crossed, ",") + "]");
    if (want.has_labels && (t.labels != want.labels || t.labels_status != want.labels_status))
      rep.differences.push_back(who + "labels " + t.labels_status + " [" + Join(t.labels, ",") + "], expected " +
                                want.labels_status + " [" + Join(want.labels, ",") + "]");
    size_t n = std::max(t.frames.size(), want.frames.size());
    for (size_t i = 0; i < n; i++) {
      std::string a = i < t.frames.size() ? t.frames[i] : "(none)";
      std::string b = i < want.frames.size() ? want.frames[i] : "(none)";
      if (a != b) {
        rep.differences.push_back(who + "frame " + std::to_string(i) + ": " + a + ", expected " + b);
        // The first difference says enough; the frames from there on show where the stacks part.
        auto from = [i](const std::vector<std::string>& v) {
          std::vector<std::string> out(v.begin() + std::min(i, v.size()), v.begin() + std::min(i + 4, v.size()));
          return Join(out, " <- ") + (v.size() > i + 4 ? " <- ..." : "");
        };
        rep.differences.push_back("  replayed from frame " + std::to_string(i) + ": " + from(t.frames));
        rep.differences.push_back("  expected from frame " + std::to_string(i) + ": " + from(want.frames));
        break;
      }
    }
  }
  for (const auto& f : c->faults) {
    auto it = got.find(f.lwp);
    if (it == got.end() || !it->second->faults_hit.count(f.address))
      rep.differences.push_back("fault " + Hex(f.address) + " was never read by lwp " + std::to_string(f.lwp));
    else if (it->second->stop != "read_fault")
      rep.differences.push_back("fault " + Hex(f.address) + ": lwp " + std::to_string(f.lwp) + " stopped with " +
                                it->second->stop + ", not read_fault");
  }
  for (int i = 0; i < SB_CROSS_MAX; i++)
    if (r->counters.crossing[i][SB_CNT_CROSSED] > 0) rep.crossed.push_back(unwind::CrossingName(i));
  for (const auto& m : c->must_cross)
    if (std::find(rep.crossed.begin(), rep.crossed.end(), m) == rep.crossed.end())
      rep.differences.push_back("crossing " + m + " was never taken");
  rep.passed = rep.differences.empty();
  return rep;
}

Status RebaseCase(const std::string& case_json, const std::string& cache) {
  CoreCase c;
  auto r = ReplayCase(case_json, cache, &c);
  if (!r.ok()) return MakeError(r.error());
  bool with_labels = std::any_of(c.threads.begin(), c.threads.end(), [](const CaseThread& t) { return t.has_labels; });
  c.threads = ToExpectations(*r, with_labels);
  c.go_version = r->go_version;
  return WriteFileAtomic(case_json, SerializeCase(c));
}

Result<std::string> NewCase(const NewCaseOptions& o) {
  if (o.name.empty() || o.name.find('/') != std::string::npos) return MakeError("coredump new: a plain --name is needed");
  fs::path dir(o.dir);
  std::error_code ec;
  fs::create_directories(dir / "blobs", ec);
  if (ec) return MakeError("cannot create " + (dir / "blobs").string() + ": " + ec.message());
  auto store = [&](const std::string& local, const std::string& label, bool is_core) -> Result<std::string> {
    // Any input compression (zstd, lz4, xz) is undone; blobs are always stored as zstd.
    auto img = SparseImage::FromFile(local);
    if (!img.ok()) return img.take_error();
    auto data = ReadFile((*img)->path());
    if (!data.ok()) return data.take_error();
    std::string raw = std::move(*data);
    if (is_core) {
      auto slim = SlimCore(raw);
      if (!slim.ok()) return slim.take_error();
      raw = std::move(*slim);
    }
    char h[20];
    snprintf(h, sizeof(h), "%016" PRIx64, Fnv1a(raw));
    std::string rel = "blobs/" + label + "-" + h + ".zst";
    if (!fs::exists(dir / rel)) {
      auto z = ZstdCompress(raw, raw.size() > (64u << 20) ? 9 : 19);
      if (!z.ok()) return z.take_error();
      if (auto st = WriteFileAtomic((dir / rel).string(), *z); !st.ok()) return MakeError(st.error());
    }
    return rel;
  };
  CoreCase c;
  c.name = o.name;
  c.description = o.description;
  c.state = o.state;
  c.oracle = o.oracle;
  c.must_cross = o.must_cross;
  c.faults = o.faults;
  auto core_rel = store(o.core, o.name + ".core", true);
  if (!core_rel.ok()) return core_rel.take_error();
  c.core = *core_rel;
  bool have_exe = false;
  for (const auto& f : o.files) {
    auto rel = store(f.local, fs::path(f.path).filename().string(), false);
    if (!rel.ok()) return rel.take_error();
    c.files.push_back(CaseFile{f.path, *rel, f.role});
    have_exe |= f.role == "executable";
  }
  if (!have_exe) return MakeError("coredump new: one file must be the executable");
  auto r = ReplayLoaded(c, dir, o.cache_dir);
  if (!r.ok()) return r.take_error();
  c.arch = r->arch;
  c.go_version = r->go_version;
  c.threads = ToExpectations(*r, true);
  if (!o.dlv_output.empty()) {
    std::vector<std::string> bad;
    auto ok = CompareWithDelve(*r, o.dlv_output, &bad);
    if (!bad.empty() && o.accept_delve_difference.empty()) return MakeError("Delve disagrees: " + Join(bad, "; "));
    if (!bad.empty()) ok.push_back("KNOWN DIFFERENCE (" + o.accept_delve_difference + "): " + Join(bad, "; "));
    c.oracle = ok.empty() ? "dlv core: no goroutine on any thread (native frames only)"
                          : "dlv core (" + Join(ok, "; ") + ")";
    if (!o.oracle.empty()) c.oracle += "; " + o.oracle;
  }
  if (!o.gdb_output.empty()) {
    std::vector<std::string> bad;
    auto ok = CompareWithGdb(*r, o.gdb_output, &bad);
    if (!bad.empty()) return MakeError("gdb disagrees: " + Join(bad, "; "));
    c.oracle += "; gdb backtrace, native frames up to the first switch (" + Join(ok, "; ") + ")";
  }
  std::string path = (dir / (o.name + ".json")).string();
  if (auto st = WriteFileAtomic(path, SerializeCase(c)); !st.ok()) return MakeError(st.error());
  return path;
}

}  // namespace sb::coredump
