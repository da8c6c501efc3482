// A decimal whole number written alone, as the numeric environment settings take it
// (PAX_OCL_GPU_GROUP_SIZE, PAX_OCL_FLASH_GROUP, ...): its value, or nullopt for anything else (no
// digits, a sign or space, trailing text, beyond 64 bits). Each setting keeps its own range check
// and one-line message.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <optional>

namespace paxocl {

inline std::optional<unsigned long long> parse_whole_number(const char* text) {
  if (text == nullptr || *text < '0' || *text > '9') return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (*end != '\0' || errno == ERANGE) return std::nullopt;
  return value;
}

}  // namespace paxocl
