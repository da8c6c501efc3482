// PrefetchInput: runs another input on a background thread, keeping up to `depth` batches ready,
// so that the device does not wait for input in steady state. state() is the state after the
// last batch handed out (not after the ones prefetched), so save/restore stays exact. Errors
// raised by the inner input are re-thrown from get_next().
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "inputs/base_input.h"

namespace paxocl::inputs {

class PrefetchInput : public BaseInput {
 public:
  PrefetchInput(std::unique_ptr<BaseInput> inner, int depth);
  ~PrefetchInput() override;

  std::optional<Batch> get_next() override;
  void reset() override;
  InputState state() const override;
  void restore(const InputState& state) override;

 private:
  struct Item {
    std::optional<Batch> batch;
    InputState after;
    std::exception_ptr error;
  };
  void start();
  void stop();
  void run();

  std::unique_ptr<BaseInput> inner_;
  std::size_t depth_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Item> queue_;
  bool stopping_ = false, finished_ = false;
  InputState consumed_;
  std::thread worker_;
};

}  // namespace paxocl::inputs
