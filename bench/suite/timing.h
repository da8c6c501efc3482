// Best-of-N wall time: one warm-up call, then `reps` timed calls. A device operation's calls each
// end with the queue drained; a host operation's (OpenBLAS on host arrays) are timed as they are.
#pragma once

#include <algorithm>
#include <chrono>

#include "device/queue.h"

namespace paxocl::bench {

template <typename F>
double best_seconds(int reps, F&& run) {
  run();
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

template <typename F>
double best_seconds(device::Queue& queue, int reps, F&& run) {
  return best_seconds(reps, [&] {
    run();
    queue.finish();
  });
}

}  // namespace paxocl::bench
