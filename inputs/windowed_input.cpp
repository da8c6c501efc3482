#include "inputs/windowed_input.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/errors.h"
#include "common/rng.h"

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

WindowGeometry WindowedInput::geometry() const {
  return {static_cast<std::uint64_t>(params_.seq_len), global_batch_, stream_.size()};
}

std::uint64_t WindowedInput::pass_batches() const {
  // At most one pass, as Pax's evaluation ends at the input's end: a window counted twice would
  // skew the mean towards the windows that wrap.
  return params_.eval_loop_num_batches > 0
             ? std::min<std::uint64_t>(static_cast<std::uint64_t>(params_.eval_loop_num_batches), batches_per_epoch_)
             : batches_per_epoch_;
}

InputState WindowedInput::state() const {
  InputState s = state_;
  s.geometry = geometry();
  return s;
}

namespace {
std::string describe(const WindowGeometry& g) {
  return fmt::format("MAX_SEQ_LEN={}, global batch {}, {} tokens", g.seq_len, g.global_batch, g.tokens);
}
}  // namespace

void WindowedInput::restore(const InputState& saved) {
  const WindowGeometry here = geometry();
  const bool same = !saved.geometry || *saved.geometry == here;
  if (!params_.is_training) {
    if (!same || saved.index > pass_batches()) {
      throw DataError(fmt::format("evaluation input state '{}' does not fit this input ({}, {} batches per pass)",
                                  saved.to_string(), describe(here), pass_batches()));
    }
    state_ = {saved.epoch, saved.index, std::nullopt};
    return;
  }
  if (same) {
    if (saved.index >= batches_per_epoch_) {
      throw DataError(fmt::format(
          "input state '{}' is past the end of an epoch of {} batches ({}); the checkpoint's input position is corrupt{}",
          saved.to_string(), batches_per_epoch_, describe(here),
          saved.geometry ? "" : " or was saved under other data, MAX_SEQ_LEN or batch: resume with those, or start a new "
                                "--job_log_dir"));
    }
    state_ = {saved.epoch, saved.index, std::nullopt};
    return;
  }
  // Another geometry: check the index against the epoch it was saved in, then carry over the
  // tokens consumed in that epoch. index * G * T < tokens, so nothing overflows.
  const WindowGeometry& was = *saved.geometry;
  const std::uint64_t was_windows = was.seq_len > 0 && was.tokens > was.seq_len ? (was.tokens - 1) / was.seq_len : 0;
  const std::uint64_t was_batches = was.global_batch > 0 ? was_windows / was.global_batch : 0;
  if (saved.index >= was_batches) {
    throw DataError(fmt::format("input state '{}' is past the end of its own epoch of {} batches; the checkpoint's input "
                                "position is corrupt",
                                saved.to_string(), was_batches));
  }
  const std::uint64_t consumed = saved.index * was.global_batch * was.seq_len;
  const std::uint64_t batches = consumed / (global_batch_ * here.seq_len);
  state_ = {saved.epoch + batches / batches_per_epoch_, batches % batches_per_epoch_, std::nullopt};
  spdlog::warn("the input position was saved for {}; this run has {}: continuing {} tokens into the epoch, at epoch {} "
               "batch {} of {}",
               describe(was), describe(here), consumed, state_.epoch, state_.index, batches_per_epoch_);
}

std::optional<Batch> WindowedInput::get_next() {
  if (!params_.is_training && state_.index >= pass_batches()) return std::nullopt;
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
