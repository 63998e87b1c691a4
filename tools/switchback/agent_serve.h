// `switchback agent --listen/--push`: wires serve/ (HTTP endpoint, Pyroscope push) to the
// agent. The adapter (AgentSource) is the only place that knows both libraries.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "agent/agent.h"
#include "base/result.h"

namespace sb::cli {

struct ServeFlags {
  std::string listen;
  std::string push;
  std::string app_name;
  std::string tenant;
  std::string token_file;
  std::string spool_max = "256MiB";
};

void AddServeFlags(CLI::App* cmd, ServeFlags* flags);

class AgentServing {
 public:
  // Checks every serve flag, opens the spool and binds the listener: all before the sampler
  // loads, so a bad flag or a port in use fails at once. DIR is the agent's --dir.
  static Result<std::unique_ptr<AgentServing>> Start(const ServeFlags& flags, const std::string& dir);
  ~AgentServing();
  // For AgentOptions::on_window_written: spools each window for the push (no-op without --push).
  std::function<void(const agent::WindowFile&)> WindowHook();
  // From here on requests reach the agent (before: an empty list, captures refused).
  void Attach(agent::Agent* agent);
  // Ends captures and the listener; the pusher leaves what is unsent in the spool.
  void Stop();

  struct Impl;

 private:
  explicit AgentServing(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sb::cli
