#include "app/experiment_flags.h"

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::app {

config::Experiment experiment_from_flags(const CliArgs& args, const std::optional<std::filesystem::path>& fallback_file) {
  const auto file = args.flag("fdl_config_file");
  const auto name = args.flag("fdl_config");
  if (file && name) throw ConfigError("give --fdl_config or --fdl_config_file, not both");
  std::optional<std::filesystem::path> from;
  if (file) {
    from = *file;
  } else if (!name) {
    from = fallback_file;
  }
  config::Experiment e = from ? config::Experiment::from_file(*from) : config::Experiment::named(name.value_or("Default"));
  for (const auto& [field, value] : args.fdl_overrides()) e.override_field(field, value);
  return e;
}

std::vector<std::string> hparam_names() {
  std::vector<std::string> names;
  for (const auto& s : config::Experiment::schema()) names.push_back(s.name);
  return names;
}

std::string experiments_help() {
  std::string out = "Experiments: ";
  for (const auto& n : config::Experiment::names()) out += n + " ";
  out += "\n\nHyper-parameters (--fdl.NAME=VALUE; lists as [8,1,1], strings optionally quoted):\n";
  for (const auto& s : config::Experiment::schema()) out += fmt::format("  {:<28} {}\n", s.name, s.help);
  return out;
}

}  // namespace paxocl::app
