// GET /debug/pprof/: the followed processes as a plain HTML table (a browser shows it, every
// value escaped) or, with ?format=json, the same rows as JSON for scripts.
#pragma once

#include <string>
#include <vector>

#include "serve/profile_source.h"

namespace sb::serve {

std::string RenderIndexHtml(const std::vector<ProcessInfo>& processes);
std::string RenderIndexJson(const std::vector<ProcessInfo>& processes);

// Share of samples whose stack reached a root (0 when there are none).
double WholeShare(const ProcessInfo& p);

std::string HtmlEscape(const std::string& s);

}  // namespace sb::serve
