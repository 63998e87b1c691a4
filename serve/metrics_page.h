// GET /metrics: everything an SRE watches, in the Prometheus text format, with Prometheus'
// naming conventions (switchback_ prefix, base units, _total for counters).
#pragma once

#include <optional>
#include <string>

#include "base/build_info.h"
#include "base/kernel_features.h"
#include "serve/process_self.h"
#include "serve/profile_source.h"
#include "serve/stats.h"

namespace sb::serve {

struct MetricsInput {
  // switchback_build_info's labels: fixed for the process's life, so gathered once by the caller.
  BuildInfo build;
  KernelFeatures kernel;
  SourceCounters source;
  std::optional<PushStats> push;  // absent without --push
  ServeStats serve;
  std::optional<SelfUsage> self;  // absent when /proc/self could not be read
};

std::string RenderMetrics(const MetricsInput& in);

}  // namespace sb::serve
