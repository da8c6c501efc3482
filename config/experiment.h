// Experiment: a named set of Pax hyper-parameters (the UPPER_CASE attributes of a Pax experiment
// class), with the registry of named experiments and the --fdl overrides.
//   Experiment::named("Pile126M")          a registered experiment (unknown names suggest the nearest)
//   Experiment::from_file("exp.json")       {"fdl_config": "Default", "NUM_LAYERS": 6, ...}: inherits
//                                           from a named experiment and overrides some values
//   e.set("PERCORE_BATCH_SIZE", "4")        an override, parsed by the field's type
//   e.to_json()                             the resolved experiment, loadable by from_file
// Types: int, float, bool, string (quotes optional), int list ("[8,1,1]").
#pragma once

#include <cstddef>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/model_config.h"

namespace paxocl::config {

enum class HParamType { kInt, kFloat, kBool, kString, kIntList };
using HParamValue = std::variant<long, double, bool, std::string, std::vector<long>>;

// A hyper-parameter and its documented range, checked whenever a value is set (set, set_json,
// from_file): ints, floats and every entry of an int list lie in [min, max] (either end exclusive
// when flagged); an int list with list_sizes has one of those many entries; a string with choices is one of them.
struct HParamSpec {
  std::string name;
  HParamType type;
  std::string help;
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_exclusive = false, max_exclusive = false;
  std::vector<std::size_t> list_sizes = {};  // empty: any length
  std::vector<std::string> choices = {};
};

// ConfigError naming the field, the value and its range unless `value` is in the spec's range.
void check_hparam_range(const HParamSpec& spec, const HParamValue& value);

class Experiment {
 public:
  static const std::vector<HParamSpec>& schema();
  static std::vector<std::string> names();              // registered experiments
  static Experiment named(const std::string& name);      // ConfigError (with suggestions) if unknown
  static Experiment from_file(const std::filesystem::path& file);  // ConfigError naming the file and field
  // The same from parsed JSON (a checkpoint manifest's record); `source` starts a malformed object's message.
  static Experiment from_json(const nlohmann::json& j, const std::string& source);

  const std::string& name() const { return name_; }
  void set(const std::string& field, std::string_view text);        // ConfigError: unknown field / bad value
  void set_json(const std::string& field, const nlohmann::json& value);

  long get_int(const std::string& field) const;
  double get_float(const std::string& field) const;
  bool get_bool(const std::string& field) const;
  std::string get_string(const std::string& field) const;
  std::vector<long> get_int_list(const std::string& field) const;

  nlohmann::json to_json() const;
  models::ModelConfig model_config() const;  // ARCHITECTURE, NUM_LAYERS .. VOCAB_SIZE, INIT_STD; validated (ConfigError)
  // Sets the hyper-parameters that describe `model` (a weight file's architecture), INIT_STD aside.
  void set_model(const models::ModelConfig& model);

  // A --fdl override: set(), remembered as a setting the user gave.
  void override_field(const std::string& field, std::string_view text);
  bool overridden(const std::string& field) const { return overridden_.contains(field); }
  // set_model(model) for a weights file's architecture (`source` names the file); ConfigError, one
  // line naming both values, when an overridden field holds another value than the file records.
  void adopt_model(const models::ModelConfig& model, const std::string& source);

 private:
  const HParamSpec& spec(const std::string& field) const;
  std::string name_;
  std::string base_;  // the registered experiment it derives from
  std::map<std::string, HParamValue> values_;
  std::set<std::string> overridden_;  // fields a --fdl flag set
};

}  // namespace paxocl::config
