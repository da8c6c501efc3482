// pax-ocl's error types and the exit codes the CLI maps them to (docs/architecture.md):
//   0 ok, 2 usage/config error, 3 data error, 4 device/runtime error.
// Every error's what() is one line that says what is wrong and, where possible, how to fix it.
#pragma once

#include <stdexcept>
#include <string>

namespace paxocl {

enum ExitCode : int { kExitOk = 0, kExitUsage = 2, kExitData = 3, kExitDevice = 4 };

// Bad flags, hyper-parameters or mesh shapes. Deterministic: every process of a job raises it alike.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input data: token ids out of range, malformed batches, unreadable or corrupt data files.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Missing or unusable hardware, drivers or runtime resources.
class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace paxocl
