// FNV-1a, 64 bits: a small, stable hash (the same value on every compiler, standard library and
// run, unlike std::hash), for file names and checksums of caches. Not cryptographic.
#pragma once

#include <cstdint>
#include <string_view>

namespace paxocl {

inline constexpr std::uint64_t kFnv1aOffsetBasis = 1469598103934665603ull;

inline std::uint64_t fnv1a(std::string_view data, std::uint64_t hash = kFnv1aOffsetBasis) {
  for (unsigned char c : data) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

}  // namespace paxocl
