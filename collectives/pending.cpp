#include "collectives/pending.h"

namespace paxocl::collectives {

Pending::Pending() : state_(std::make_shared<State>()) {}

void Pending::wait() const {
  std::unique_lock lock(state_->mutex);
  state_->finished.wait(lock, [&] { return state_->done; });
  if (state_->error) std::rethrow_exception(state_->error);
}

bool Pending::done() const {
  std::lock_guard lock(state_->mutex);
  return state_->done;
}

device::Event Pending::device_event(const device::Context& context) const {
  device::Event event = device::Event::user(context);
  std::lock_guard lock(state_->mutex);
  if (state_->done) {
    event.set_user_status(state_->error ? CL_INVALID_OPERATION : CL_COMPLETE);  // dependants fail with it
  } else {
    state_->events.push_back(event);
  }
  return event;
}

void Pending::complete() const { finish(nullptr); }
void Pending::fail(std::exception_ptr error) const { finish(std::move(error)); }

void Pending::finish(std::exception_ptr error) const {
  std::vector<device::Event> events;
  {
    std::lock_guard lock(state_->mutex);
    if (state_->done) return;
    state_->done = true;
    state_->error = std::move(error);
    events.swap(state_->events);
  }
  for (const device::Event& e : events) e.set_user_status(state_->error ? CL_INVALID_OPERATION : CL_COMPLETE);
  state_->finished.notify_all();
}

}  // namespace paxocl::collectives
