// Saturating size arithmetic for sizes taken from untrusted headers: a result that would overflow
// is the largest uint64, so it can only fail the size check that follows, never wrap past it.
#pragma once

#include <cstdint>
#include <limits>

namespace paxocl {

inline std::uint64_t mul_sat(std::uint64_t a, std::uint64_t b) {
  constexpr auto kMax = std::numeric_limits<std::uint64_t>::max();
  return (a != 0 && b > kMax / a) ? kMax : a * b;
}

inline std::uint64_t add_sat(std::uint64_t a, std::uint64_t b) {
  constexpr auto kMax = std::numeric_limits<std::uint64_t>::max();
  return b > kMax - a ? kMax : a + b;
}

}  // namespace paxocl
