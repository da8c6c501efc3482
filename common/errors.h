// pax-ocl's error types and the exit codes the CLI maps them to (docs/architecture.md):
//   0 ok, 2 usage/config error, 3 data error, 4 device/runtime error, 75 preempted (checkpoint saved).
// Every error's what() is one line that says what is wrong and, where possible, how to fix it.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace paxocl {

// kExitPreempted: SIGTERM / SIGUSR1 arrived, the step finished and a checkpoint was saved; requeue
// the job (Slurm: scontrol requeue) and it resumes from that checkpoint.
enum ExitCode : int { kExitOk = 0, kExitUsage = 2, kExitData = 3, kExitDevice = 4, kExitPreempted = 75 };

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

// A file that cannot be opened or read, or whose contents are bad (truncated, malformed, out of range):
// weight files, checkpoint payloads, any safetensors file. what() is "<file>: <what is wrong>".
class FileError : public DataError {
 public:
  FileError(const std::filesystem::path& file, std::string_view what)
      : DataError(file.string() + ": " + std::string(what)) {}
};

// Missing or unusable hardware, drivers or runtime resources.
class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace paxocl
