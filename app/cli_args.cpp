#include "app/cli_args.h"

#include <algorithm>
#include <cctype>
#include <numeric>

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::app {

std::string format_flags(std::span<const FlagSpec> flags) {
  std::string out;
  for (const FlagSpec& f : flags) {
    out += fmt::format("  --{:<14} {}{}\n", f.value.empty() ? f.name : f.name + "=", f.help,
                       f.value.empty() ? "" : " [" + f.value + "]");
  }
  return out;
}

CliArgs::CliArgs(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (!arg.starts_with("--")) {
      if (command_.empty() && positionals_.empty()) {
        command_ = std::string(arg);
      } else {
        positionals_.emplace_back(arg);
      }
      continue;
    }
    const std::string_view body = arg.substr(2);
    const std::size_t eq = body.find('=');
    const std::string name(body.substr(0, eq));
    const std::string value = eq == std::string_view::npos ? "true" : std::string(body.substr(eq + 1));
    if (name.empty()) throw ConfigError(fmt::format("'{}' is not a flag; write --name=value", arg));
    if (name.starts_with("fdl.")) {
      const std::string key = name.substr(4);
      if (key.empty()) throw ConfigError(fmt::format("'{}': missing the hyper-parameter name after --fdl.", arg));
      if (eq == std::string_view::npos) {
        throw ConfigError(fmt::format("--fdl.{} needs a value: write --fdl.{}=VALUE", key, key));
      }
      fdl_[key] = value;
    } else {
      flags_[name] = value;
    }
  }
}

void CliArgs::validate(std::span<const FlagSpec> flags, std::span<const std::string> fdl_names) const {
  std::vector<std::string> flag_names;
  for (const FlagSpec& f : flags) flag_names.push_back(f.name);
  for (const auto& [name, value] : flags_) {
    if (std::find(flag_names.begin(), flag_names.end(), name) == flag_names.end()) {
      throw ConfigError(fmt::format("unknown flag --{}{}; see `pax-ocl {} --help`", name,
                                    did_you_mean(name, flag_names, "--"), command_));
    }
  }
  for (const auto& [name, value] : fdl_) {
    if (fdl_names.empty()) {
      throw ConfigError(fmt::format("--fdl.{}: `pax-ocl {}` takes no --fdl.NAME hyper-parameters (its settings come "
                                    "from the job or the weights file); see `pax-ocl {} --help`",
                                    name, command_, command_));
    }
    if (std::find(fdl_names.begin(), fdl_names.end(), name) == fdl_names.end()) {
      std::string known;
      for (const std::string& n : fdl_names) known += (known.empty() ? "" : ", ") + n;
      throw ConfigError(fmt::format("unknown hyper-parameter --fdl.{}{}; `pax-ocl {}` accepts: {}", name,
                                    did_you_mean(name, fdl_names, "--fdl."), command_, known));
    }
  }
}

std::optional<std::string> CliArgs::flag(std::string_view name) const {
  if (auto it = flags_.find(name); it != flags_.end()) return it->second;
  return std::nullopt;
}

bool CliArgs::flag_bool(std::string_view name) const {
  const auto value = flag(name);
  if (!value) return false;
  if (*value == "true" || *value == "1" || *value == "True") return true;
  if (*value == "false" || *value == "0" || *value == "False") return false;
  throw ConfigError(fmt::format("--{}={}: expected a boolean (true or false)", name, *value));
}

std::optional<std::string> CliArgs::fdl(std::string_view name) const {
  if (auto it = fdl_.find(name); it != fdl_.end()) return it->second;
  return std::nullopt;
}

}  // namespace paxocl::app
