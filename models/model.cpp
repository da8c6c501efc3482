#include "models/model.h"

namespace paxocl::models {

LossStats Model::evaluate(const inputs::Batch& batch) {
  Pass pass = begin_pass(batch, false);
  for (int l = 0; l < layout().num_blocks(); ++l) forward_block(pass, l);
  return forward_loss(pass);
}

LossStats Model::train_step_gradients(const inputs::Batch& batch, const std::function<void(int)>& block_done) {
  Pass pass = begin_pass(batch, true);
  const int blocks = layout().num_blocks();
  for (int l = 0; l < blocks; ++l) forward_block(pass, l);
  const LossStats loss = forward_loss(pass);
  begin_backward(pass);
  for (int l = blocks - 1; l >= 0; --l) {
    backward_block(pass, l);
    if (block_done) block_done(l);
  }
  finish_backward(pass);
  return loss;
}

}  // namespace paxocl::models
