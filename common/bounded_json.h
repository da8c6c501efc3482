// JSON from untrusted files (experiment files, safetensors headers, dataset descriptions, checkpoint
// sidecars), parsed with limits: nlohmann's parser is iterative, but copying or dumping a value is
// recursive, so 100k nested brackets would overflow the stack later, far from the file. Parsing
// stops at `max_depth` levels and at `max_bytes` of text instead.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace paxocl {

inline constexpr int kMaxJsonDepth = 64;
inline constexpr std::size_t kMaxJsonBytes = std::size_t{100} << 20;  // safetensors' own header cap

// Throws std::invalid_argument with the reason (syntax error with its position, too deep, too long):
// callers wrap it in their own error naming the file.
nlohmann::json parse_json_bounded(std::string_view text, int max_depth = kMaxJsonDepth,
                                  std::size_t max_bytes = kMaxJsonBytes);

// Reads `file` (at most max_bytes) and parses it as above; std::invalid_argument also when it cannot be read.
nlohmann::json read_json_file_bounded(const std::filesystem::path& file, int max_depth = kMaxJsonDepth,
                                      std::size_t max_bytes = kMaxJsonBytes);

}  // namespace paxocl
