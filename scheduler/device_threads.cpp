#include "scheduler/device_threads.h"

#include <mutex>
#include <thread>
#include <vector>

namespace paxocl::scheduler {

void run_on_threads(std::size_t count, const std::function<void(std::size_t)>& work,
                    const std::function<void(std::exception_ptr)>& on_error) {
  std::mutex mutex;
  std::exception_ptr first_error;
  std::vector<std::thread> threads;
  threads.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    threads.emplace_back([&, i] {
      try {
        work(i);
      } catch (...) {
        const std::exception_ptr error = std::current_exception();
        {
          std::lock_guard lock(mutex);
          if (!first_error) first_error = error;
        }
        on_error(error);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace paxocl::scheduler
