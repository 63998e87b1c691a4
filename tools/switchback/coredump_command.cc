// `switchback coredump new|analyze|check|rebase`: coredump test cases, replayed through the
// same unwind code as the live sampler.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/file_util.h"
#include "coredump/core_file.h"
#include "coredump/decompress.h"
#include "coredump/replay/case_runner.h"
#include "coredump/replay/junit_report.h"
#include "coredump/sparse_image.h"
#include "tools/switchback/commands.h"
#include "unwinder/process_maps.h"

namespace sb::cli {
namespace fs = std::filesystem;
namespace {

std::string DefaultCache() {
  const char* t = getenv("TMPDIR");
  return std::string(t && *t ? t : "/tmp") + "/switchback-core-cache";
}

int Fail(const std::string& cmd, const std::string& msg) {
  fprintf(stderr, "switchback coredump %s: %s\n", cmd.c_str(), msg.c_str());
  return 1;
}

// "LOCAL" or "LOCAL=PATH_IN_CORE".
coredump::NewCaseFile ParseFileArg(const std::string& arg, const std::string& role) {
  coredump::NewCaseFile f;
  auto eq = arg.find('=');
  f.local = arg.substr(0, eq);
  f.path = eq == std::string::npos ? "" : arg.substr(eq + 1);
  f.role = role;
  return f;
}

// A --core as given: raw cores are read in place; compressed ones (zstd, lz4, xz, by magic:
// systemd-coredump's core.*.zst included) and standard input ("-") are decompressed into
// memory, zero pages as holes. path() is what CoreFile opens.
class CoreInput {
 public:
  Status Open(const std::string& arg) {
    if (arg != "-") {
      int fd = open(arg.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return MakeError(arg + ": " + std::strerror(errno));
      char head[8] = {};
      ssize_t n = read(fd, head, sizeof(head));
      close(fd);
      coredump::Compression c = coredump::DetectCompression(std::string_view(head, n > 0 ? n : 0));
      if (c == coredump::Compression::kNone) {
        path_ = arg;
        return Status::Ok();
      }
    }
    auto img = coredump::SparseImage::FromFile(arg);
    if (!img.ok()) return MakeError(img.error());
    image_ = std::move(*img);
    path_ = image_->path();
    fprintf(stderr, "switchback coredump: %s: %s core, %llu bytes (%llu not zero, held in memory)\n",
            arg == "-" ? "standard input" : arg.c_str(), coredump::CompressionName(image_->compression()),
            static_cast<unsigned long long>(image_->stats().size),
            static_cast<unsigned long long>(image_->stats().stored));
    return Status::Ok();
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::unique_ptr<coredump::SparseImage> image_;
};

// The executable as the core names it: the NT_FILE mapping that holds AT_ENTRY ("" if none).
std::string ExecutableInCore(const coredump::CoreFile& core) {
  auto entry = core.Auxv(9);  // AT_ENTRY
  if (!entry) return "";
  for (const auto& m : core.mappings())
    if (*entry >= m.start && *entry < m.end) return m.path;
  return "";
}

// --binary when given; else the executable the core's notes name, if this machine has it
// (replaying a production core on the host that wrote it, systemd-coredump's case).
Result<std::string> BinaryArg(const std::string& binary, const std::string& core_path) {
  if (!binary.empty()) return binary;
  auto core = coredump::CoreFile::Open(core_path);
  if (!core.ok()) return core.take_error();
  std::string exe = ExecutableInCore(**core);
  if (exe.empty())
    return MakeError("the core names no executable (no NT_FILE mapping of AT_ENTRY" +
                     ((*core)->ExecutableName().empty() ? std::string(")")
                                                        : ", process " + (*core)->ExecutableName() + ")") +
                     ": give --binary");
  std::error_code ec;
  if (!fs::is_regular_file(exe, ec)) return MakeError("the core's executable " + exe + " is not on this machine: give --binary");
  fprintf(stderr, "switchback coredump: executable %s (named by the core)\n", exe.c_str());
  return exe + "=" + exe;
}

// Fills in the path the process saw for files given without one: the NT_FILE entry with the
// same file name; for the executable, else the mapping that holds AT_ENTRY (a binary renamed
// or kept elsewhere); else the local path itself (qemu cores list no files).
void ResolvePaths(const std::string& core_path, std::vector<coredump::NewCaseFile>* files) {
  auto core = coredump::CoreFile::Open(core_path);
  for (auto& f : *files) {
    if (!f.path.empty()) continue;
    f.path = fs::absolute(f.local).string();
    if (!core.ok()) continue;
    std::string base = fs::path(f.local).filename().string();
    bool found = false;
    for (const auto& m : (*core)->mappings())
      if (fs::path(m.path).filename() == base) {
        f.path = m.path;
        found = true;
        break;
      }
    if (!found && f.role == "executable") {
      std::string exe = ExecutableInCore(**core);
      if (!exe.empty()) f.path = exe;
    }
  }
}

// Replays a core with local files, checking the executable's build id against the core's.
Result<coredump::ReplayResult> ReplayLocal(const std::string& core_path, const std::vector<coredump::NewCaseFile>& files,
                                           bool reads) {
  coredump::ReplayInput in;
  in.record_reads = reads;
  in.check_build_id = true;
  in.core_path = core_path;
  for (const auto& f : files) {
    in.files[f.path] = f.local;
    if (f.role == "executable") in.executable = f.path;
  }
  auto r = coredump::Replay(in);
  if (r.ok()) fprintf(stderr, "switchback coredump: build id %s\n", r->build_id.c_str());
  return r;
}

struct NewArgs {
  int pid = 0;
  std::string core, binary, name, dir = "testdata/coredumps", state, description, oracle, cache = DefaultCache();
  std::vector<std::string> libs, must_cross, faults;
  std::string dlv, accept_delve_difference, gdb;
};

// gcore writes PREFIX.PID; returns that path.
Result<std::string> RunGcore(int pid, const std::string& prefix) {
  std::string cmd = fmt::format("gcore -o '{}' {} >/dev/null 2>&1", prefix, pid);
  int rc = system(cmd.c_str());
  std::string out = prefix + "." + std::to_string(pid);
  if (rc != 0 || !fs::exists(out)) return MakeError("gcore failed for pid " + std::to_string(pid) + " (is gdb installed?)");
  return out;
}

int RunNew(const NewArgs& a) {
  {
    // The case directory must take files before gcore spends its time (NewCase creates it too).
    std::error_code ec;
    fs::create_directories(a.dir, ec);
    if (ec) return Fail("new", "cannot write cases to " + a.dir + ": " + ec.message());
    if (auto st = CheckWritable((fs::path(a.dir) / (a.name + ".json")).string()); !st.ok())
      return Fail("new", st.error());
  }
  coredump::NewCaseOptions o;
  o.dir = a.dir;
  o.name = a.name;
  o.state = a.state;
  o.description = a.description;
  o.oracle = a.oracle;
  o.must_cross = a.must_cross;
  o.cache_dir = a.cache;
  o.accept_delve_difference = a.accept_delve_difference;
  if (!a.gdb.empty()) {
    auto text = ReadFile(a.gdb);
    if (!text.ok()) return Fail("new", text.error());
    o.gdb_output = *text;
  }
  if (!a.dlv.empty()) {
    auto text = ReadFile(a.dlv);
    if (!text.ok()) return Fail("new", text.error());
    o.dlv_output = *text;
  }
  for (const auto& f : a.faults) {
    auto colon = f.find(':');
    if (colon == std::string::npos) return Fail("new", "--fault takes ADDRESS:LWP, got " + f);
    o.faults.push_back({strtoull(f.substr(0, colon).c_str(), nullptr, 0),
                        static_cast<uint32_t>(strtoul(f.substr(colon + 1).c_str(), nullptr, 10))});
  }
  CoreInput core_in;  // outlives NewCase: o.core may be its in-memory image
  fs::path tmp = fs::temp_directory_path() / ("sb-case-" + std::to_string(getpid()));
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } cleanup{tmp};
  if (a.pid > 0) {
    std::error_code ec;
    std::string proc = "/proc/" + std::to_string(a.pid);
    std::string exe = fs::read_symlink(proc + "/exe", ec).string();
    if (ec) return Fail("new", "process " + std::to_string(a.pid) + " does not exist");
    fs::create_directories(tmp, ec);
    // Copy the files first: the process may exit while gcore runs.
    auto copy = [&](const std::string& from, const std::string& path, const std::string& role) -> bool {
      fs::path to = tmp / (std::to_string(o.files.size()) + "-" + fs::path(path).filename().string());
      std::error_code e;
      fs::copy_file(from, to, fs::copy_options::overwrite_existing, e);
      if (e) return false;
      o.files.push_back({to.string(), path, role});
      return true;
    };
    if (!copy(proc + "/exe", exe, "executable")) return Fail("new", "cannot copy the executable of " + proc);
    // Libraries with code (libc for cgo): their frames get names in the case.
    auto maps = unwinder::ReadProcessMaps(a.pid);
    if (maps.ok()) {
      std::set<std::string> seen{exe};
      for (const auto& m : *maps)
        if (m.executable() && m.file_backed() && seen.insert(m.path).second) copy(proc + "/root" + m.path, m.path, "library");
    }
    auto core = RunGcore(a.pid, (tmp / "core").string());
    if (!core.ok()) return Fail("new", core.error());
    o.core = *core;
  } else {
    if (a.core.empty()) return Fail("new", "give --pid PID, or --core CORE (and --binary EXE unless the core names it)");
    if (auto st = core_in.Open(a.core); !st.ok()) return Fail("new", st.error());
    auto binary = BinaryArg(a.binary, core_in.path());
    if (!binary.ok()) return Fail("new", binary.error());
    o.core = core_in.path();
    o.files.push_back(ParseFileArg(*binary, "executable"));
    for (const auto& l : a.libs) o.files.push_back(ParseFileArg(l, "library"));
    ResolvePaths(o.core, &o.files);
    // A core replayed with the wrong binary gives wrong frames that look plausible: refuse it
    // before anything is stored.
    if (auto r = ReplayLocal(o.core, o.files, false); !r.ok()) return Fail("new", r.error());
  }
  auto path = coredump::NewCase(o);
  if (!path.ok()) return Fail("new", path.error());
  printf("wrote %s\n", path->c_str());
  return 0;
}

void PrintThreads(const coredump::ReplayResult& r, long lwp, bool reads) {
  for (const auto& t : r.threads) {
    if (lwp > 0 && t.lwp != static_cast<uint32_t>(lwp)) continue;
    std::string crossed;
    for (const auto& c : t.crossed) crossed += (crossed.empty() ? "" : ",") + c;
    printf("thread %u%s: %s%s\n", t.lwp, t.goid ? fmt::format(" (goroutine {})", t.goid).c_str() : "",
           t.stop.c_str(), crossed.empty() ? "" : (", crossed " + crossed).c_str());
    for (const auto& f : t.frames) printf("  %s\n", f.c_str());
    if (!t.labels.empty()) {
      std::string l;
      for (const auto& kv : t.labels) l += (l.empty() ? "" : ", ") + kv;
      printf("  labels (%s): %s\n", t.labels_status.c_str(), l.c_str());
    }
    if (reads) {
      printf("  reads:");
      for (uint64_t a : t.reads) printf(" 0x%llx", static_cast<unsigned long long>(a));
      printf("\n");
    }
  }
}

struct AnalyzeArgs {
  std::string target, core, binary, cache = DefaultCache();
  std::vector<std::string> libs;
  long lwp = 0;
  bool reads = false;
};

int RunAnalyze(const AnalyzeArgs& a) {
  if (!a.target.empty()) {
    auto r = coredump::ReplayCase(a.target, a.cache, nullptr, a.reads);
    if (!r.ok()) return Fail("analyze", r.error());
    PrintThreads(*r, a.lwp, a.reads);
    return 0;
  }
  if (a.core.empty()) return Fail("analyze", "give CASE.json, or --core CORE (and --binary EXE unless the core names it)");
  CoreInput core_in;
  if (auto st = core_in.Open(a.core); !st.ok()) return Fail("analyze", st.error());
  auto binary = BinaryArg(a.binary, core_in.path());
  if (!binary.ok()) return Fail("analyze", binary.error());
  std::vector<coredump::NewCaseFile> files{ParseFileArg(*binary, "executable")};
  for (const auto& l : a.libs) files.push_back(ParseFileArg(l, "library"));
  ResolvePaths(core_in.path(), &files);
  auto r = ReplayLocal(core_in.path(), files, a.reads);
  if (!r.ok()) return Fail("analyze", r.error());
  PrintThreads(*r, a.lwp, a.reads);
  return 0;
}

struct CheckArgs {
  std::vector<std::string> targets{"testdata/coredumps"};
  std::string cache = DefaultCache();
  std::string junit, filter;
  bool verbose = false;
};

// Exit codes of `check` (documented in --help and docs/coredump-ci.md).
constexpr int kCheckPassed = 0;
constexpr int kCheckFailed = 1;   // a case differs from its expectation or cannot be replayed
constexpr int kCheckHarness = 2;  // the harness could not run: bad arguments, no cases, no report

int CheckHarnessFail(const std::string& msg) {
  fprintf(stderr, "switchback coredump check: %s\n", msg.c_str());
  printf("coredump check: harness error: %s\n", msg.c_str());
  return kCheckHarness;
}

int RunCheck(const CheckArgs& a) {
  auto t_start = std::chrono::steady_clock::now();
  std::optional<std::regex> filter;
  if (!a.filter.empty()) {
    try {
      filter.emplace(a.filter, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return CheckHarnessFail("bad --filter " + a.filter + ": " + e.what());
    }
  }
  std::vector<std::string> cases;
  for (const auto& t : a.targets) {
    std::error_code ec;
    if (fs::is_directory(t, ec)) {
      auto found = coredump::FindCases(t);
      cases.insert(cases.end(), found.begin(), found.end());
    } else if (fs::exists(t, ec)) {
      cases.push_back(t);
    } else {
      return CheckHarnessFail("no such case or directory: " + t);
    }
  }
  if (filter) {
    std::vector<std::string> kept;
    for (const auto& c : cases)
      if (std::regex_search(fs::path(c).stem().string(), *filter)) kept.push_back(c);
    cases.swap(kept);
  }
  if (cases.empty()) return CheckHarnessFail(filter ? "no case matches --filter " + a.filter : "no cases found");
  if (!a.junit.empty())
    if (auto st = CheckWritable(a.junit); !st.ok()) return CheckHarnessFail(st.error());
  int failed = 0, errors = 0;
  uint64_t largest_core = 0;  // the non-zero part of the largest core, held in memory while replayed
  std::vector<coredump::JunitCase> junit;
  printf("%-44s %-6s %-10s %7s %9s  %-6s %s\n", "case", "arch", "go", "threads", "replay", "result", "crossed");
  for (const auto& path : cases) {
    auto t0 = std::chrono::steady_clock::now();
    auto rep = coredump::CheckCase(path, a.cache);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    coredump::JunitCase jc;
    jc.name = fs::path(path).stem().string();
    jc.seconds = secs;
    if (!rep.ok()) {
      printf("%-44s %-6s %-10s %7s %9s  %-6s %s\n", jc.name.c_str(), "", "", "", "", "ERROR", rep.error().c_str());
      errors++;
      jc.classname = "coredump";
      jc.outcome = coredump::JunitCase::kError;
      jc.message = rep.error();
      jc.details = {rep.error()};
      junit.push_back(std::move(jc));
      continue;
    }
    largest_core = std::max(largest_core, rep->core_stored_bytes);
    std::string crossed;
    for (const auto& c : rep->crossed) crossed += (crossed.empty() ? "" : ",") + c;
    printf("%-44s %-6s %-10s %7zu %7.1fms  %-6s %s\n", rep->name.c_str(), rep->arch.c_str(),
           rep->go_version.c_str(), rep->threads, rep->replay_ms, rep->passed ? "pass" : "FAIL", crossed.c_str());
    for (const auto& d : rep->differences) printf("    %s\n", d.c_str());
    jc.classname = "coredump." + rep->arch + "." + rep->go_version;
    if (!rep->passed) {
      failed++;
      jc.outcome = coredump::JunitCase::kFailed;
      jc.message = rep->differences.front();
      jc.details = rep->differences;
    }
    junit.push_back(std::move(jc));
  }
  double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  size_t passed = cases.size() - static_cast<size_t>(failed + errors);
  if (!a.junit.empty()) {
    if (auto st = WriteFileAtomic(a.junit, coredump::JunitXml("switchback.coredump", junit, total)); !st.ok())
      return CheckHarnessFail(st.error());
  }
  printf("coredump check: %zu passed, %d failed, %d errors of %zu cases in %.1f s (largest core in memory %.1f MB)%s\n",
         passed, failed, errors, cases.size(), total, static_cast<double>(largest_core) / 1e6,
         a.junit.empty() ? "" : ("; JUnit report " + a.junit).c_str());
  return failed + errors > 0 ? kCheckFailed : kCheckPassed;
}

}  // namespace

void AddCoredumpCommand(CLI::App& app, Runner* run) {
  CLI::App* cd = app.add_subcommand(
      "coredump",
      "Coredump test cases: a core plus its binaries and the expected stack of every thread, replayed\n"
      "through the same unwind code the BPF sampler runs.");
  cd->require_subcommand(1);

  auto na = std::make_shared<NewArgs>();
  CLI::App* n = cd->add_subcommand("new", "Make a case from a live process (gcore) or an existing core");
  n->add_option("--pid", na->pid, "capture this process with gcore");
  n->add_option("--core", na->core,
                "an existing core: raw, zstd, lz4 or xz (by magic; systemd-coredump's core.*.zst), or - for stdin");
  n->add_option("--binary", na->binary,
                "the executable: LOCAL or LOCAL=PATH_IN_CORE (default: the one the core's NT_FILE names, if here);\n"
                "its build id must equal the one in the core");
  n->add_option("--lib", na->libs, "a library the core maps: LOCAL or LOCAL=PATH_IN_CORE (repeatable)");
  n->add_option("--name", na->name, "case name (file NAME.json)")->required();
  n->add_option("--dir", na->dir, "case directory (default testdata/coredumps)");
  n->add_option("--state", na->state, "the unwind state captured (systemstack, mcall-curg, ...)");
  n->add_option("--description", na->description, "what the case shows");
  n->add_option("--oracle", na->oracle, "which oracle confirmed the frames (dlv, traceback, gdb)");
  n->add_option("--must-cross", na->must_cross, "crossings the case must take (repeatable)");
  n->add_option("--fault", na->faults, "ADDRESS:LWP: a read there fails; that thread must stop with read_fault");
  n->add_option("--cache", na->cache, "where compressed files are extracted");
  n->add_option("--dlv", na->dlv,
                "output of `dlv core` with `goroutines -t`: every goroutine on a thread must match it");
  n->add_option("--gdb", na->gdb,
                "output of gdb's `thread apply all bt`: native frames up to the first switch must match");
  n->add_option("--accept-delve-difference", na->accept_delve_difference,
                "why a disagreement with Delve is a known limitation; recorded in the case");
  n->callback([na, run] { *run = [na] { return RunNew(*na); }; });

  auto aa = std::make_shared<AnalyzeArgs>();
  CLI::App* an = cd->add_subcommand("analyze", "Print every thread's stack of a case or of a core");
  an->add_option("case", aa->target, "CASE.json");
  an->add_option("--core", aa->core, "a core instead of a case: raw, zstd, lz4 or xz (by magic), or - for stdin");
  an->add_option("--binary", aa->binary,
                 "the executable: LOCAL or LOCAL=PATH_IN_CORE (default: the one the core names, if here);\n"
                 "its build id must equal the one in the core");
  an->add_option("--lib", aa->libs, "a library: LOCAL or LOCAL=PATH_IN_CORE (repeatable)");
  an->add_option("--lwp", aa->lwp, "only this thread");
  an->add_flag("--reads", aa->reads, "also print every address the unwinder read (to choose --fault addresses)");
  an->add_option("--cache", aa->cache, "where compressed files are extracted");
  an->callback([aa, run] { *run = [aa] { return RunAnalyze(*aa); }; });

  auto ca = std::make_shared<CheckArgs>();
  CLI::App* ch = cd->add_subcommand(
      "check",
      "Replay cases and compare every thread with its expected stack. Cores are decompressed into\n"
      "memory (zero pages as holes); binaries are extracted once into --cache as sparse files.\n"
      "Exit status: 0 every case passed, 1 a case failed or could not be replayed, 2 the harness\n"
      "could not run (bad arguments, no cases, report not writable). The last line is a summary.");
  ch->add_option("cases", ca->targets, "case files or directories (default testdata/coredumps)");
  ch->add_option("--cache", ca->cache, "where binaries are extracted (sparse; ~60 MB for all cases)");
  ch->add_option("--junit", ca->junit, "also write a JUnit XML report here (one testcase per case)");
  ch->add_option("--filter", ca->filter, "only cases whose name matches this regular expression (ECMAScript)");
  ch->callback([ca, run] { *run = [ca] { return RunCheck(*ca); }; });

  auto ra = std::make_shared<std::vector<std::string>>();
  auto rcache = std::make_shared<std::string>(DefaultCache());
  CLI::App* rb = cd->add_subcommand("rebase", "Rewrite cases' expected stacks from the current replay");
  rb->add_option("cases", *ra, "case files")->required();
  rb->add_option("--cache", *rcache, "where compressed files are extracted");
  rb->callback([ra, rcache, run] {
    *run = [ra, rcache] {
      for (const auto& c : *ra) {
        if (auto st = coredump::RebaseCase(c, *rcache); !st.ok()) return Fail("rebase", st.error());
        printf("rebased %s\n", c.c_str());
      }
      return 0;
    };
  });
}

}  // namespace sb::cli
