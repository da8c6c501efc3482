// Buffer<T>: RAII device memory holding `count` elements of T. The name is used in error messages
// only ("allocating 'wte' (12.6 MiB)").
#pragma once

#include <cstddef>
#include <string>

#include "device/allocation_fault.h"
#include "device/cl_error.h"
#include "device/cl_handle.h"
#include "device/context.h"

namespace paxocl::device {

std::string format_bytes(std::size_t bytes);  // "12.6 MiB"

template <typename T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Context& context, std::size_t count, const std::string& name,
         cl_mem_flags flags = CL_MEM_READ_WRITE)
      : count_(count) {
    cl_int err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
    cl_mem mem = allocation_fault_injected(name) ? nullptr : clCreateBuffer(context.get(), flags, bytes(), nullptr, &err);
    check_cl(err, "clCreateBuffer", "allocating '" + name + "' (" + format_bytes(bytes()) + ")");
    handle_ = ClHandle<cl_mem>(mem);
    context.count_allocation(bytes());
  }

  // A sub-buffer aliasing elements [offset, offset + count). `offset` bytes must be a multiple
  // of the device's base address alignment (ParameterLayout aligns tensors for this).
  Buffer view(std::size_t offset, std::size_t count, const std::string& name) const {
    cl_buffer_region region{offset * sizeof(T), count * sizeof(T)};
    cl_int err = CL_SUCCESS;
    cl_mem mem = clCreateSubBuffer(handle_.get(), CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
    check_cl(err, "clCreateSubBuffer", "viewing '" + name + "' at element " + std::to_string(offset));
    Buffer sub;
    sub.handle_ = ClHandle<cl_mem>(mem);
    sub.count_ = count;
    return sub;
  }

  // Takes ownership of one reference to `mem`, `count` elements long (for wrappers such as TypedBuffer).
  static Buffer adopt(cl_mem mem, std::size_t count) {
    Buffer b;
    b.handle_ = ClHandle<cl_mem>(mem);
    b.count_ = count;
    return b;
  }

  cl_mem get() const { return handle_.get(); }
  std::size_t count() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

 private:
  ClHandle<cl_mem> handle_;
  std::size_t count_ = 0;
};

}  // namespace paxocl::device
