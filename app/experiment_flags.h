// The experiment a command's flags name, shared by every command that takes one (train, eval,
// plan): --fdl_config=NAME or --fdl_config_file=FILE (inheriting from a named one), then the
// --fdl.NAME=VALUE overrides, each range-checked.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "app/cli_args.h"
#include "config/experiment.h"

namespace paxocl::app {

// The flags' experiment: --fdl_config_file, else --fdl_config, else `fallback_file` when given
// (eval's job directory), else Default; with the overrides applied. ConfigError for both flags at once.
config::Experiment experiment_from_flags(const CliArgs& args, const std::optional<std::filesystem::path>& fallback_file = {});
// Every hyper-parameter's name: the --fdl overrides CliArgs::validate accepts.
std::vector<std::string> hparam_names();
// The registered experiments and every hyper-parameter with its help, for --help.
std::string experiments_help();

}  // namespace paxocl::app
