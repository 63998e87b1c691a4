// Subcommands of the switchback CLI. Each registers its options and returns its exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace sb::cli {

using Runner = std::function<int()>;

// Adds `record` to app; *run is set to its runner.
void AddRecordCommand(CLI::App& app, Runner* run);
void AddInspectCommand(CLI::App& app, Runner* run);
void AddCoredumpCommand(CLI::App& app, Runner* run);
void AddTraceCommand(CLI::App& app, Runner* run);
void AddAgentCommand(CLI::App& app, Runner* run);
void AddMergeCommand(CLI::App& app, Runner* run);

// --version on the top-level app; VersionText is what it prints.
void AddVersionFlag(CLI::App& app);
std::string VersionText();

}  // namespace sb::cli
