#include "app/sampling_flags.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::app {

namespace {

float float_flag(const CliArgs& args, const char* name, float fallback) {
  const auto text = args.flag(name);
  if (!text) return fallback;
  char* end = nullptr;
  errno = 0;
  const double value = text->empty() ? NAN : std::strtod(text->c_str(), &end);
  // Finite and within float's range; validate() then applies the flag's own rule.
  if (text->empty() || end != text->c_str() + text->size() || errno == ERANGE || !std::isfinite(value) ||
      std::fabs(value) > std::numeric_limits<float>::max()) {
    throw ConfigError(fmt::format("--{}={}: expected a finite number", name, *text));
  }
  return static_cast<float>(value);
}

}  // namespace

int integer_flag(const CliArgs& args, const char* name, int fallback) {
  const auto text = args.flag(name);
  if (!text) return fallback;
  int value = 0;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (text->empty() || ec != std::errc() || end != text->data() + text->size()) {
    throw ConfigError(fmt::format("--{}={}: expected an integer", name, *text));
  }
  return value;
}


sampling::SamplingOptions sampling_options(const CliArgs& args) {
  const sampling::SamplingOptions defaults;
  sampling::SamplingOptions options;
  options.temperature = float_flag(args, "temperature", defaults.temperature);
  options.top_k = integer_flag(args, "top_k", defaults.top_k);
  options.top_p = float_flag(args, "top_p", defaults.top_p);
  sampling::validate(options);
  return options;
}

}  // namespace paxocl::app
