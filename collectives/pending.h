// Pending: one asynchronous collective in flight. The host can wait() for it (errors are
// re-thrown there), and a device queue can depend on it without the host: device_event(context)
// returns an OpenCL user event that completes when the collective does (or fails with it), to be
// listed in an enqueue's wait list.
#pragma once

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "device/context.h"
#include "device/event.h"

namespace paxocl::collectives {

class Pending {
 public:
  Pending();

  void wait() const;
  bool done() const;
  device::Event device_event(const device::Context& context) const;

  // The communication side: exactly one of these, once.
  void complete() const;
  void fail(std::exception_ptr error) const;

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable finished;
    bool done = false;
    std::exception_ptr error;
    std::vector<device::Event> events;  // user events to complete with the collective
  };
  void finish(std::exception_ptr error) const;
  std::shared_ptr<State> state_;
};

}  // namespace paxocl::collectives
