// Context: RAII cl_context over one or more devices of one platform.
#pragma once

#include <span>

#include "device/cl_error.h"
#include "device/cl_handle.h"

namespace paxocl::device {

class Context {
 public:
  Context() = default;
  explicit Context(std::span<const cl_device_id> devices) {
    cl_int err = CL_SUCCESS;
    cl_context ctx = clCreateContext(nullptr, static_cast<cl_uint>(devices.size()), devices.data(),
                                     nullptr, nullptr, &err);
    check_cl(err, "clCreateContext", "creating an OpenCL context");
    handle_ = ClHandle<cl_context>(ctx);
  }
  cl_context get() const { return handle_.get(); }

 private:
  ClHandle<cl_context> handle_;
};

}  // namespace paxocl::device
