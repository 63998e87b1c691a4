// WriteTopTable: a terminal summary in the layout of `go tool pprof -top`, so users can read
// it the same way (flat = samples with the function as the leaf, cum = samples with the
// function anywhere on the stack).
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "profile/frames.h"
#include "profile/writers.h"

namespace sb::profile {
namespace {

struct Row {
  std::string name;
  int64_t flat = 0;
  int64_t cum = 0;
};

// Six characters wide, as pprof prints it: "50.00%", "    0%" and "  100%".
std::string Percent(int64_t part, int64_t total) {
  if (total <= 0 || part == 0) return "    0%";
  if (part == total) return "  100%";
  char buf[16];
  std::snprintf(buf, sizeof buf, "%5.2f%%", 100.0 * static_cast<double>(part) / static_cast<double>(total));
  return buf;
}

std::string FormatRow(const Row& r, int64_t sum, int64_t total) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%10" PRId64 " %s %s %10" PRId64 " %s  ", r.flat,
                Percent(r.flat, total).c_str(), Percent(sum, total).c_str(), r.cum,
                Percent(r.cum, total).c_str());
  return buf + r.name + "\n";
}

}  // namespace

std::string WriteTopTable(const ProfileData& p, size_t max_rows) {
  // Inlined frames are expanded, so a function inlined into its caller gets its own row just
  // as pprof shows it. A recursive function counts once per sample toward cum.
  std::map<std::string, Row> rows;
  int64_t total = 0;
  int64_t total_nanos = 0;
  for (const Sample& s : p.samples) {
    if (s.count <= 0) continue;
    total += s.count;
    total_nanos += s.nanos;
    std::vector<std::string> frames = RootFirstFrames(p, s);
    rows[frames.back()].flat += s.count;
    std::set<std::string> seen(frames.begin(), frames.end());
    for (const std::string& f : seen) rows[f].cum += s.count;
  }

  std::vector<Row> sorted;
  sorted.reserve(rows.size());
  for (auto& [name, row] : rows) {
    row.name = name;
    sorted.push_back(std::move(row));
  }
  // Same order as `pprof -top`: flat descending, ties by name, so the table is deterministic
  // and rows line up with pprof's when compared side by side.
  std::sort(sorted.begin(), sorted.end(), [](const Row& a, const Row& b) {
    if (a.flat != b.flat) return a.flat > b.flat;
    return a.name < b.name;
  });
  size_t shown = max_rows == 0 ? sorted.size() : std::min(max_rows, sorted.size());

  char head[160];
  std::snprintf(head, sizeof head, "Total: %" PRId64 " samples, %.3fs cpu\n", total,
                static_cast<double>(total_nanos) / 1e9);
  std::string out = head;
  std::snprintf(head, sizeof head, "Showing top %zu of %zu functions\n", shown, sorted.size());
  out += head;
  out += "      flat  flat%   sum%        cum   cum%\n";
  int64_t sum = 0;
  for (size_t i = 0; i < shown; ++i) {
    const Row& r = sorted[i];
    sum += r.flat;
    out += FormatRow(r, sum, total);
  }
  return out;
}

}  // namespace sb::profile
