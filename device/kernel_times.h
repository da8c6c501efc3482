// Device time per kernel name over one traced step: where a step's device time went, longest
// first. bench_train_step prints it for its traced step; a training job logs it for each of its
// TRACE_STEPS, so a run's log alone compares kernels across builds and devices.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>

namespace paxocl::device {

class KernelTimes {
 public:
  void add(const std::string& kernel, double ms);  // one traced command of `kernel`, `ms` on the device
  double total_ms() const { return total_ms_; }
  std::size_t kernels() const { return by_kernel_.size(); }
  // "name ms (calls)" for every kernel, longest first (ties by name), two spaces apart, e.g.
  // "gemm_mma_nt 25.61 (48)  flash_attention_forward 2.86 (12)".
  std::string format() const;

 private:
  std::map<std::string, std::pair<int, double>> by_kernel_;  // name -> (calls, ms)
  double total_ms_ = 0;
};

}  // namespace paxocl::device
