// Rng: a small deterministic generator (splitmix64) with a Box-Muller Gaussian, so the same seed
// gives the same initial weights on every platform and standard library.
#pragma once

#include <cmath>
#include <cstdint>

namespace paxocl {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next_u64() {
    std::uint64_t z = (state_ += kGamma);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Skips n draws of next_u64 (splitmix64 is a counter: the state after n draws is seed + n x gamma),
  // so a stream can be split into pieces generated in parallel with the very same values.
  void discard(std::uint64_t n) { state_ += n * kGamma; }
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }  // [0, 1)
  double normal() {
    const double u1 = 1.0 - uniform(), u2 = uniform();  // u1 in (0, 1]
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  static constexpr std::uint64_t kGamma = 0x9E3779B97F4A7C15ull;  // splitmix64's increment
  std::uint64_t state_;
};

}  // namespace paxocl
