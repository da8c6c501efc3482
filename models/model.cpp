#include "models/model.h"

#include <algorithm>

namespace paxocl::models {

namespace {
// The sub-batches of `batch` a model of `max_batch` sequences runs: max_batch each, the last the rest.
std::vector<inputs::Batch> sub_batches(const inputs::Batch& batch, std::size_t max_batch) {
  const int step = static_cast<int>(std::max<std::size_t>(max_batch, 1));
  if (batch.batch <= step) return {batch};
  std::vector<inputs::Batch> parts;
  for (int first = 0; first < batch.batch; first += step) parts.push_back(batch.sequences(first, std::min(step, batch.batch - first)));
  return parts;
}
}  // namespace

LossStats Model::evaluate(const inputs::Batch& batch) {
  LossStats total;
  for (const inputs::Batch& part : sub_batches(batch, max_batch())) {
    Pass pass = begin_pass(part, false);
    for (int l = 0; l < layout().num_blocks(); ++l) forward_block(pass, l);
    total += forward_loss(pass);
  }
  return total;
}

LossStats Model::train_step_gradients(const inputs::Batch& batch, const std::function<void(int)>& block_done) {
  const std::vector<inputs::Batch> parts = sub_batches(batch, max_batch());
  const int blocks = layout().num_blocks();
  LossStats total;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    Pass pass = begin_pass(parts[i], i == 0);  // gradients zeroed once, then accumulated
    if (parts.size() > 1) pass.mean_over = batch.weight_sum();
    const bool last = i + 1 == parts.size();
    for (int l = 0; l < blocks; ++l) forward_block(pass, l);
    total += forward_loss(pass);
    begin_backward(pass);
    for (int l = blocks - 1; l >= 0; --l) {
      backward_block(pass, l);
      if (block_done && last) block_done(l);
    }
    finish_backward(pass);
  }
  return total;
}

}  // namespace paxocl::models
