// OpenCL error reporting. Every failing OpenCL call becomes a ClError whose message names the
// call, the error code's symbolic name and what pax-ocl was doing, e.g.
//   clCreateBuffer failed with CL_INVALID_BUFFER_SIZE (-61) while allocating 'logits' (0 bytes)
#pragma once

#include <string>
#include <string_view>

#include "common/errors.h"
#include "device/cl_api.h"

namespace paxocl::device {

// Symbolic name of an OpenCL error code ("CL_OUT_OF_RESOURCES"), or "CL_UNKNOWN_ERROR".
std::string_view cl_error_name(cl_int code);

class ClError : public DeviceError {
 public:
  ClError(std::string_view call, cl_int code, std::string_view doing);
  cl_int code() const { return code_; }

 protected:
  ClError(std::string message, cl_int code) : DeviceError(std::move(message)), code_(code) {}

 private:
  cl_int code_;
};

// A program that failed to build; what() carries the compiler's build log.
class ProgramBuildError : public ClError {
 public:
  // `origin`, when not empty, says where the source came from ("PAX_OCL_KERNEL_SOURCE_DIR's x.cl").
  ProgramBuildError(std::string_view program_name, std::string_view device_name, std::string log,
                    std::string_view origin = "");
  const std::string& build_log() const { return log_; }

 private:
  std::string log_;
};

// Throws ClError unless code == CL_SUCCESS.
inline void check_cl(cl_int code, std::string_view call, std::string_view doing) {
  if (code != CL_SUCCESS) throw ClError(call, code, doing);
}

}  // namespace paxocl::device
