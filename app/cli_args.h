// Command-line parsing shared by every `pax-ocl <command>`. Flags are absl/Pax style:
//   --name=value     a flag (a bare --name means "true")
//   --fdl.NAME=VALUE a hyper-parameter override (UPPER_CASE names, as Pax's Fiddle flags)
// Each command declares its flags in a FlagSpec list; an unknown flag or override is a ConfigError
// that suggests the nearest known names, as Fiddle does for typos.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/nearest_names.h"

namespace paxocl::app {

using paxocl::did_you_mean;
using paxocl::nearest_names;

struct FlagSpec {
  std::string name;      // without dashes
  std::string value;     // placeholder shown in help ("auto|gpu|cpu|0,1"); "" for a boolean flag
  std::string help;
};

class CliArgs {
 public:
  // argv[0] is the program; argv[1] the command. Throws ConfigError on malformed arguments.
  CliArgs(int argc, char** argv);

  const std::string& command() const { return command_; }
  const std::vector<std::string>& positionals() const { return positionals_; }

  // Rejects flags and overrides not in the lists (with suggestions).
  void validate(std::span<const FlagSpec> flags, std::span<const std::string> fdl_names) const;

  std::optional<std::string> flag(std::string_view name) const;
  bool flag_bool(std::string_view name) const;  // absent -> false; "true/false/1/0" accepted
  std::optional<std::string> fdl(std::string_view name) const;
  const std::map<std::string, std::string, std::less<>>& fdl_overrides() const { return fdl_; }

 private:
  std::string command_;
  std::vector<std::string> positionals_;
  std::map<std::string, std::string, std::less<>> flags_;
  std::map<std::string, std::string, std::less<>> fdl_;
};

// The "Flags:" lines of a command's --help, one per flag: name, help and accepted values.
std::string format_flags(std::span<const FlagSpec> flags);


}  // namespace paxocl::app
