// run_on_threads: work(i) for i in [0, count), each on a thread of its own (one per device whose
// pass may block on another's: tensor groups' sums, pipeline stages' messages). The first error
// is rethrown once every thread has ended; `on_error` sees each error as it happens, to release the
// threads still waiting on the failed one (it must not throw).
#pragma once

#include <cstddef>
#include <exception>
#include <functional>

namespace paxocl::scheduler {

void run_on_threads(std::size_t count, const std::function<void(std::size_t)>& work,
                    const std::function<void(std::exception_ptr)>& on_error);

}  // namespace paxocl::scheduler
