// Errors in a multi-process job without hangs or a flood of duplicates. run_agreed(world, step)
// runs `step` on every process, then all processes exchange whether it failed: if any did, every
// process throws the same AgreedError (the messages of the failing ranks, merged), which main()
// reports once from rank 0 and turns into a clean exit of the whole job. Without this, a process
// that fails alone leaves the others waiting forever in their next collective.
#pragma once

#include <stdexcept>
#include <string>

#include "collectives/process_world.h"

namespace paxocl::app {

class AgreedError : public std::runtime_error {
 public:
  AgreedError(const std::string& message, int exit_code) : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

// Exit code for an exception: ConfigError 2, DataError 3, DeviceError (and anything else) 4.
int exit_code_for(const std::exception& error);

// Collective: every process must call it at the same point. `step` runs locally.
void agree_on_failure(const collectives::ProcessWorld& world, int exit_code, const std::string& message);

template <typename Step>
void run_agreed(const collectives::ProcessWorld& world, Step&& step) {
  int code = 0;
  std::string message;
  try {
    step();
  } catch (const std::exception& e) {
    code = exit_code_for(e);
    message = e.what();
  }
  agree_on_failure(world, code, message);
}

}  // namespace paxocl::app
