#include "inputs/synthetic_stream.h"

#include <numeric>

#include <fmt/format.h>

#include "common/errors.h"
#include "common/rng.h"

namespace paxocl::inputs {

SyntheticStream::SyntheticStream(int vocab_size, std::size_t length, std::uint64_t seed, double noise) {
  if (vocab_size < 1 || length < 2) {
    throw ConfigError(fmt::format("synthetic stream needs VOCAB_SIZE >= 1 and at least 2 tokens (got {} and {})",
                                  vocab_size, length));
  }
  Rng rng(seed);
  const auto vocab = static_cast<std::uint64_t>(vocab_size);
  std::vector<int> successor(static_cast<std::size_t>(vocab_size));
  std::iota(successor.begin(), successor.end(), 0);
  for (std::size_t i = successor.size() - 1; i > 0; --i) std::swap(successor[i], successor[rng.next_u64() % (i + 1)]);
  tokens_.reserve(length);
  tokens_.push_back(0);
  while (tokens_.size() < length) {
    tokens_.push_back(rng.uniform() < noise ? static_cast<int>(rng.next_u64() % vocab)
                                            : successor[static_cast<std::size_t>(tokens_.back())]);
  }
}

Batch SyntheticStream::batch(int batch_size, int seq_len, long index) const {
  Batch b{batch_size, seq_len, {}, {}, {}};
  const std::size_t windows = tokens_.size() - static_cast<std::size_t>(seq_len);  // window starts 0 .. windows-1
  if (seq_len < 1 || tokens_.size() <= static_cast<std::size_t>(seq_len)) {
    throw ConfigError(fmt::format("synthetic stream of {} tokens is too short for sequences of {}", tokens_.size(), seq_len));
  }
  for (int r = 0; r < batch_size; ++r) {
    const std::size_t start = (static_cast<std::size_t>(index * batch_size + r) * static_cast<std::size_t>(seq_len)) % windows;
    for (int t = 0; t < seq_len; ++t) {
      b.ids.push_back(tokens_[start + static_cast<std::size_t>(t)]);
      b.targets.push_back(tokens_[start + static_cast<std::size_t>(t) + 1]);
      b.weights.push_back(1.0f);
    }
  }
  return b;
}

}  // namespace paxocl::inputs
