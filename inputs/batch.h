// Batch: one step's input on the host, batch-major (Pax's NestedMap of ids, labels, weights):
// B sequences of T positions.
//   ids, targets (B*T) token ids < VOCAB_SIZE;  weights (B*T) >= 0, 0 marks padding.
#pragma once

#include <vector>


namespace paxocl::inputs {

struct Batch {
  int batch = 0;
  int seq_len = 0;
  std::vector<int> ids;
  std::vector<int> targets;
  std::vector<float> weights;

  // Throws DataError naming the first problem (sizes, ids or targets outside [0, vocab_size),
  // sequences longer than max_seq_len, negative or non-finite weights).
  void validate(int vocab_size, int max_seq_len) const;
  // Sequences [first, first + count) as a batch of their own (logic_error outside this batch).
  Batch sequences(int first, int count) const;
  double weight_sum() const;  // the loss's denominator: sum of the weights, in double
};

}  // namespace paxocl::inputs
