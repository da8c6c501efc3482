#include "device/kernel_times.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

namespace paxocl::device {

void KernelTimes::add(const std::string& kernel, double ms) {
  auto& [calls, total] = by_kernel_[kernel];
  ++calls;
  total += ms;
  total_ms_ += ms;
}

std::string KernelTimes::format() const {
  std::vector<std::pair<std::string, std::pair<int, double>>> sorted(by_kernel_.begin(), by_kernel_.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& x, const auto& y) { return x.second.second > y.second.second; });
  std::string out;
  for (const auto& [name, v] : sorted) out += fmt::format("{}{} {:.2f} ({})", out.empty() ? "" : "  ", name, v.second, v.first);
  return out;
}

}  // namespace paxocl::device
