#include "inputs/batch.h"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::inputs {

Batch Batch::sequences(int first, int count) const {
  if (first < 0 || count < 0 || first + count > batch) {
    throw std::logic_error(fmt::format("sequences [{}, {}) of a batch of {}", first, first + count, batch));
  }
  Batch part{count, seq_len, {}, {}, {}};
  const auto begin = static_cast<std::ptrdiff_t>(first) * seq_len, end = begin + static_cast<std::ptrdiff_t>(count) * seq_len;
  part.ids.assign(ids.begin() + begin, ids.begin() + end);
  part.targets.assign(targets.begin() + begin, targets.begin() + end);
  part.weights.assign(weights.begin() + begin, weights.begin() + end);
  return part;
}

double Batch::weight_sum() const {
  double sum = 0;
  for (float w : weights) sum += w;
  return sum;
}

void Batch::validate(int vocab_size, int max_seq_len) const {
  if (batch < 1 || seq_len < 1) throw DataError(fmt::format("batch of {} x {} tokens: both must be at least 1", batch, seq_len));
  if (seq_len > max_seq_len) {
    throw DataError(fmt::format("sequence length {} exceeds MAX_SEQ_LEN={}", seq_len, max_seq_len));
  }
  const std::size_t n = static_cast<std::size_t>(batch) * static_cast<std::size_t>(seq_len);
  if (ids.size() != n || targets.size() != n || weights.size() != n) {
    throw DataError(fmt::format("batch {} x {} needs {} ids, targets and weights; got {}, {} and {}", batch, seq_len, n,
                                ids.size(), targets.size(), weights.size()));
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size || targets[i] < 0 || targets[i] >= vocab_size) {
      throw DataError(fmt::format("token {} at position {} is outside the vocabulary [0, {}); check VOCAB_SIZE "
                                  "against the tokenizer",
                                  ids[i] < 0 || ids[i] >= vocab_size ? ids[i] : targets[i], i, vocab_size));
    }
    if (!(weights[i] >= 0.0f) || !std::isfinite(weights[i])) {
      throw DataError(fmt::format("weight {} at position {} must be finite and >= 0", weights[i], i));
    }
  }
}

}  // namespace paxocl::inputs
