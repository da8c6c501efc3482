// TokenBatch: one step's input on the host, batch-major: B sequences of T positions.
//   ids, targets (B*T) token ids < VOCAB_SIZE;  weights (B*T) >= 0, 0 marks padding.
#pragma once

#include <vector>

#include "models/gpt_config.h"

namespace paxocl::models {

struct TokenBatch {
  int batch = 0;
  int seq_len = 0;
  std::vector<int> ids;
  std::vector<int> targets;
  std::vector<float> weights;

  // Throws DataError naming the first problem (sizes, ids or targets out of range, bad weights).
  void validate(const GptConfig& config) const;
};

}  // namespace paxocl::models
