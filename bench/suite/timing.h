// Best-of-N wall time of a device operation: one warm-up call, then `reps` timed calls, each
// ending with the queue drained.
#pragma once

#include <algorithm>
#include <chrono>

#include "device/queue.h"

namespace paxocl::bench {

template <typename F>
double best_seconds(device::Queue& queue, int reps, F&& run) {
  run();
  queue.finish();
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    queue.finish();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

}  // namespace paxocl::bench
