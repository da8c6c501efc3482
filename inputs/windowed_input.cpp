#include "inputs/windowed_input.h"

#include <numeric>

#include <fmt/format.h>

#include "common/rng.h"
#include "device/errors.h"

namespace paxocl::inputs {

WindowedInput::WindowedInput(TokenStream stream, InputParams params) : stream_(std::move(stream)), params_(params) {
  params_.validate();
  const auto T = static_cast<std::size_t>(params_.seq_len);
  windows_ = stream_.size() > T ? (stream_.size() - 1) / T : 0;
  global_batch_ = static_cast<std::size_t>(params_.batch_size) * static_cast<std::size_t>(params_.num_infeed_hosts);
  if (params_.is_training) {
    if (windows_ < global_batch_) {
      throw DataError(fmt::format("the training data holds {} tokens: {} window(s) of MAX_SEQ_LEN={} + 1, fewer than "
                                  "one global batch of {}; use more data or a smaller batch",
                                  stream_.size(), windows_, T, global_batch_));
    }
    batches_per_epoch_ = windows_ / global_batch_;
  } else {
    if (windows_ == 0) {
      throw DataError(fmt::format("the evaluation data holds {} tokens, not one window of MAX_SEQ_LEN={} + 1",
                                  stream_.size(), T));
    }
    batches_per_epoch_ = (windows_ + global_batch_ - 1) / global_batch_;
  }
}

void WindowedInput::build_order(std::uint64_t epoch) {
  if (order_epoch_ == epoch) return;
  order_.resize(windows_);
  std::iota(order_.begin(), order_.end(), 0);
  Rng rng(params_.seed * 0x9E3779B97F4A7C15ull + epoch);  // every host derives the same permutation
  for (std::size_t i = windows_ - 1; i > 0; --i) std::swap(order_[i], order_[rng.next_u64() % (i + 1)]);
  order_epoch_ = epoch;
}

std::optional<Batch> WindowedInput::get_next() {
  if (!params_.is_training) {
    const std::uint64_t limit = params_.eval_loop_num_batches > 0 ? static_cast<std::uint64_t>(params_.eval_loop_num_batches)
                                                                  : batches_per_epoch_;
    if (state_.index >= limit) return std::nullopt;
  }
  if (params_.is_training) build_order(state_.epoch);
  const auto T = static_cast<std::size_t>(params_.seq_len), P = static_cast<std::size_t>(params_.batch_size);
  Batch b{params_.batch_size, params_.seq_len, {}, {}, {}};
  b.ids.reserve(P * T);
  b.targets.reserve(P * T);
  b.weights.reserve(P * T);
  const std::size_t step = params_.is_training ? state_.index : state_.index % batches_per_epoch_;
  std::vector<int> window;
  for (std::size_t r = 0; r < P; ++r) {
    const std::size_t slot = step * global_batch_ + static_cast<std::size_t>(params_.infeed_host_index) * P + r;
    if (slot >= windows_) {  // evaluation tail: padding
      b.ids.insert(b.ids.end(), T, 0);
      b.targets.insert(b.targets.end(), T, 0);
      b.weights.insert(b.weights.end(), T, 0.0f);
      continue;
    }
    const std::size_t w = params_.is_training ? order_[slot] : slot;
    window.clear();
    stream_.copy_window(w * T, T + 1, window);
    b.ids.insert(b.ids.end(), window.begin(), window.end() - 1);
    b.targets.insert(b.targets.end(), window.begin() + 1, window.end());
    b.weights.insert(b.weights.end(), T, 1.0f);
  }
  ++state_.index;
  if (params_.is_training && state_.index == batches_per_epoch_) {
    ++state_.epoch;
    state_.index = 0;
  }
  return b;
}

}  // namespace paxocl::inputs
