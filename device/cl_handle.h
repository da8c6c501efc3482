// ClHandle<H>: reference-counted RAII ownership of one OpenCL object (cl_context, cl_command_queue,
// cl_mem, cl_event, cl_program, cl_kernel). Copying retains, destruction releases, moving transfers.
// The typed wrappers (Context, Queue, Buffer, Event, Program, Kernel) build on it.
#pragma once

#include <utility>

#include "device/cl_api.h"

namespace paxocl::device {

template <typename H>
struct ClRefCount;

#define PAXOCL_CL_REFCOUNT(Type, Retain, Release)          \
  template <>                                              \
  struct ClRefCount<Type> {                                \
    static void retain(Type h) { Retain(h); }              \
    static void release(Type h) { Release(h); }            \
  };
PAXOCL_CL_REFCOUNT(cl_context, clRetainContext, clReleaseContext)
PAXOCL_CL_REFCOUNT(cl_command_queue, clRetainCommandQueue, clReleaseCommandQueue)
PAXOCL_CL_REFCOUNT(cl_mem, clRetainMemObject, clReleaseMemObject)
PAXOCL_CL_REFCOUNT(cl_event, clRetainEvent, clReleaseEvent)
PAXOCL_CL_REFCOUNT(cl_program, clRetainProgram, clReleaseProgram)
PAXOCL_CL_REFCOUNT(cl_kernel, clRetainKernel, clReleaseKernel)
#undef PAXOCL_CL_REFCOUNT

template <typename H>
class ClHandle {
 public:
  ClHandle() = default;
  // Takes ownership of one reference (as returned by a clCreate* call).
  explicit ClHandle(H handle) : handle_(handle) {}
  ClHandle(const ClHandle& other) : handle_(other.handle_) {
    if (handle_) ClRefCount<H>::retain(handle_);
  }
  ClHandle(ClHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  ClHandle& operator=(ClHandle other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  ~ClHandle() {
    if (handle_) ClRefCount<H>::release(handle_);
  }

  H get() const { return handle_; }
  explicit operator bool() const { return handle_ != nullptr; }

 private:
  H handle_ = nullptr;
};

}  // namespace paxocl::device
