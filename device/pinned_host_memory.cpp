#include "device/pinned_host_memory.h"

#include <cassert>

#include "device/allocation_fault.h"
#include "device/buffer.h"
#include "device/cl_error.h"

namespace paxocl::device {

PinnedHostMemory::PinnedHostMemory(const Context& context, const Queue& queue, std::size_t bytes,
                                   const std::string& name)
    : bytes_(bytes) {
  const std::string what = "allocating page-locked host memory for '" + name + "' (" + format_bytes(bytes) + ")";
  check_cl(clRetainCommandQueue(queue.get()), "clRetainCommandQueue", what);
  queue_ = ClHandle<cl_command_queue>(queue.get());
  cl_int err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
  const std::size_t allocated = bytes ? bytes : 4;  // a zero-byte buffer is invalid in OpenCL; nothing reads the 4
  cl_mem mem = allocation_fault_injected(name) ? nullptr
                                               : clCreateBuffer(context.get(), CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                                                                allocated, nullptr, &err);
  check_cl(err, "clCreateBuffer", what);
  mem_ = ClHandle<cl_mem>(mem);
  host_ = clEnqueueMapBuffer(queue_.get(), mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, allocated, 0, nullptr, nullptr,
                             &err);
  check_cl(err, "clEnqueueMapBuffer", what);
}

PinnedHostMemory::~PinnedHostMemory() {
  if (!host_) return;
  // Errors cannot be thrown from here; the buffer's release frees the memory regardless.
  if (clEnqueueUnmapMemObject(queue_.get(), mem_.get(), host_, 0, nullptr, nullptr) == CL_SUCCESS) {
    clFinish(queue_.get());
  }
}

std::span<float> PinnedHostMemory::floats(std::size_t offset, std::size_t count) const {
  assert((offset + count) * sizeof(float) <= bytes_);
  return {static_cast<float*>(host_) + offset, count};
}

}  // namespace paxocl::device
