// Context: RAII cl_context over one or more devices of one platform.
// It also keeps a running total of the bytes of every Buffer created in it (views excluded;
// nothing is subtracted when a buffer is released): a model measures what its layers allocate
// as the difference of two readings.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
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

  // Bytes of the buffers created in this context so far (shared by copies of the Context).
  std::size_t bytes_allocated() const { return *allocated_; }
  void count_allocation(std::size_t bytes) const { *allocated_ += bytes; }

 private:
  ClHandle<cl_context> handle_;
  std::shared_ptr<std::atomic<std::size_t>> allocated_ = std::make_shared<std::atomic<std::size_t>>(0);
};

}  // namespace paxocl::device
