// Fuzzes the experiment parsers (config/experiment.h, config/hparam_values.h):
//   an input that starts with "--fdl." is an override as the CLI takes it, --fdl.NAME=VALUE: the
//   value goes through every hparam_values parser and Experiment::set on a registered experiment;
//   any other input is an experiment JSON file for Experiment::from_file.
// Bad input must be a ConfigError (or DataError). An experiment that is accepted must survive to_json ->
// from_file unchanged (checkpoints store the resolved experiment that way and a resume reloads it).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/errors.h"
#include "fuzz/fuzz_support.h"
#include "config/experiment.h"
#include "config/hparam_values.h"

using namespace paxocl;
using config::Experiment;

namespace {
void require_round_trip(const Experiment& e) {
  const nlohmann::json resolved = e.to_json();
  const auto file = fuzz::scratch_dir() / "resolved.json";
  fuzz::write_file(file, resolved.dump());
  const Experiment again = Experiment::from_file(file);  // throwing here is a finding too
  fuzz::require(again.to_json() == resolved, "an experiment changed in a to_json + from_file round trip");
}

template <typename Parse>
void try_parse(Parse parse) {
  try {
    (void)parse();
  } catch (const ConfigError&) {
  } catch (const DataError&) {
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view kOverride = "--fdl.";
  std::optional<Experiment> e;
  if (input.starts_with(kOverride)) {
    const std::string_view rest = input.substr(kOverride.size());
    const std::size_t eq = rest.find('=');
    const std::string field(rest.substr(0, eq));
    const std::string_view value = eq == std::string_view::npos ? std::string_view() : rest.substr(eq + 1);
    try_parse([&] { return config::parse_int_value(field, value); });
    try_parse([&] { return config::parse_float_value(field, value); });
    try_parse([&] { return config::parse_bool_value(field, value); });
    try_parse([&] { return config::parse_string_value(field, value); });
    try_parse([&] { return config::parse_int_list_value(field, value); });
    static const std::string base = Experiment::names().front();
    try {
      Experiment x = Experiment::named(base);
      x.set(field, value);
      e = std::move(x);
    } catch (const ConfigError&) {
    } catch (const DataError&) {
    }
  } else {
    const auto file = fuzz::scratch_dir() / "experiment.json";
    fuzz::write_file(file, input);
    try {
      e = Experiment::from_file(file);
    } catch (const ConfigError&) {
    } catch (const DataError&) {
    }
  }
  if (!e) return 0;
  try {
    (void)e->model_config();
  } catch (const ConfigError&) {
  } catch (const DataError&) {
  }
  require_round_trip(*e);
  return 0;
}
