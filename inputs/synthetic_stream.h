// SyntheticStream: a deterministic token stream with learnable structure, for tests, benchmarks
// and training without a corpus. Each token's successor is a fixed random permutation of it
// (drawn from the seed), except that a `noise` fraction of tokens is uniformly random, so the
// best achievable loss is far below ln(VOCAB_SIZE) yet above zero.
#pragma once

#include <cstdint>
#include <vector>

#include "inputs/batch.h"

namespace paxocl::inputs {

class SyntheticStream {
 public:
  SyntheticStream(int vocab_size, std::size_t length, std::uint64_t seed, double noise = 0.1);

  // Batch number `index`: B windows of T+1 consecutive tokens (ids = first T, targets = next T),
  // windows taken in order and wrapping around the stream; all weights 1.
  Batch batch(int batch_size, int seq_len, long index) const;
  const std::vector<int>& tokens() const { return tokens_; }

 private:
  std::vector<int> tokens_;
};

}  // namespace paxocl::inputs
