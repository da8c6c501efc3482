#include "inputs/prefetch_input.h"

namespace paxocl::inputs {

PrefetchInput::PrefetchInput(std::unique_ptr<BaseInput> inner, int depth)
    : inner_(std::move(inner)), depth_(static_cast<std::size_t>(std::max(1, depth))), consumed_(inner_->state()) {
  start();
}

PrefetchInput::~PrefetchInput() { stop(); }

void PrefetchInput::start() {
  stopping_ = false;
  finished_ = false;
  worker_ = std::thread([this] { run(); });
}

void PrefetchInput::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (worker_.joinable()) worker_.join();
  queue_.clear();
}

void PrefetchInput::run() {
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || (!finished_ && queue_.size() < depth_); });
      if (stopping_) return;
    }
    Item item;
    try {
      item.batch = inner_->get_next();
      item.after = inner_->state();
    } catch (...) {
      item.error = std::current_exception();
    }
    {
      std::lock_guard lock(mutex_);
      finished_ = !item.batch.has_value();  // an ended pass or an error: stop producing until reset
      queue_.push_back(std::move(item));
    }
    changed_.notify_all();
  }
}

std::optional<Batch> PrefetchInput::get_next() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !queue_.empty(); });
  Item item;
  if (queue_.front().batch) {
    item = std::move(queue_.front());
    queue_.pop_front();
    consumed_ = item.after;
  } else {
    item = queue_.front();  // an end marker or an error stays at the front: later calls see it too
  }
  lock.unlock();
  changed_.notify_all();
  if (item.error) std::rethrow_exception(item.error);
  return std::move(item.batch);
}

void PrefetchInput::reset() {
  stop();
  inner_->reset();
  consumed_ = inner_->state();
  start();
}

InputState PrefetchInput::state() const {
  std::lock_guard lock(mutex_);
  return consumed_;
}

void PrefetchInput::restore(const InputState& state) {
  stop();
  try {
    inner_->restore(state);
  } catch (...) {  // a rejected state leaves the input where it was (stop() dropped the prefetched batches)
    inner_->restore(consumed_);
    start();
    throw;
  }
  consumed_ = inner_->state();  // the inner input may have mapped the position (WindowedInput::restore)
  start();
}

}  // namespace paxocl::inputs
