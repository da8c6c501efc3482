// Logging set-up (spdlog, to stderr so that stdout stays clean for --json and data output).
// In a multi-process job every line carries "[rank N]".
#pragma once

#include <optional>
#include <string>

namespace paxocl::app {

inline constexpr const char* kLogLevelEnvVar = "PAX_OCL_LOG_LEVEL";

// `level`: the --log_level flag if given, else $PAX_OCL_LOG_LEVEL, else "info". One of trace, debug,
// info, warn, error, off. Throws ConfigError otherwise.
void init_logging(const std::optional<std::string>& level, int rank, int world_size);

}  // namespace paxocl::app
