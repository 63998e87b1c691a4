// switchback: a CPU profiler for Go programs that crosses the Go runtime's stack switches.
#include <cstdio>

#include "tools/switchback/commands.h"

int main(int argc, char** argv) {
  CLI::App app{
      "switchback: CPU profiles of running Go programs, with goroutine stacks intact across the\n"
      "Go runtime's stack switches (systemstack, mcall, morestack). Output: pprof, folded, SVG."};
  app.require_subcommand(1);
  sb::cli::Runner run;
  sb::cli::AddRecordCommand(app, &run);
  sb::cli::AddInspectCommand(app, &run);
  sb::cli::AddCoredumpCommand(app, &run);
  sb::cli::AddTraceCommand(app, &run);
  sb::cli::AddAgentCommand(app, &run);
  sb::cli::AddMergeCommand(app, &run);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return run ? run() : 1;
}
