#include "app/logging.h"

#include <cstdlib>

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "common/errors.h"

namespace paxocl::app {

void init_logging(const std::optional<std::string>& level, int rank, int world_size) {
  std::string name = "info";
  if (level) {
    name = *level;
  } else if (const char* env = std::getenv(kLogLevelEnvVar); env != nullptr && *env != '\0') {
    name = env;
  }
  const spdlog::level::level_enum parsed = spdlog::level::from_str(name);
  // from_str maps anything unknown to "off"; only accept "off" when asked for by name.
  if (parsed == spdlog::level::off && name != "off") {
    throw ConfigError(fmt::format("log level '{}' is unknown; use trace, debug, info, warn, error or off", name));
  }
  auto logger = spdlog::stderr_color_mt("pax-ocl");
  const std::string rank_tag = world_size > 1 ? fmt::format(" [rank {}]", rank) : "";
  logger->set_pattern("[%H:%M:%S.%e]" + rank_tag + " [%^%l%$] %v");
  logger->set_level(parsed);
  spdlog::set_default_logger(logger);
}

}  // namespace paxocl::app
