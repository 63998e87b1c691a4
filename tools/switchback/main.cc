// switchback: a CPU profiler for Go programs that crosses the Go runtime's stack switches.
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>

#include "tools/switchback/commands.h"

namespace {

// CLI11's help puts an option's description one space after a name that ends one column short
// of the description column; help2man, which makes the man pages from --help, needs two spaces
// to tell name from description. Such a name gets its description on the next line instead, as
// a longer name does.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option(const CLI::Option* opt, bool is_positional) const override {
    std::string name = make_option_name(opt, is_positional) + make_option_opts(opt);
    if (name.size() + 3 == column_width_) name += ' ';  // format_help indents by 2
    std::stringstream out;
    CLI::detail::format_help(out, name, make_option_desc(opt), column_width_);
    return out.str();
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "switchback: CPU profiles of running Go programs, with goroutine stacks intact across the\n"
      "Go runtime's stack switches (systemstack, mcall, morestack). Output: pprof, folded, SVG.",
      // Named, not argv[0]: usage lines and the man pages made from them say `switchback`
      // whatever path ran it.
      "switchback"};
  app.formatter(std::make_shared<HelpFormatter>());  // before the subcommands: they copy it
  app.require_subcommand(1);
  sb::cli::AddVersionFlag(app);
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
