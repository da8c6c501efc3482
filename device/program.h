// Program and Kernel: RAII cl_program / cl_kernel. Programs are normally obtained from the
// ProgramCache (device/program_cache.h), which builds from source once and from binaries after.
#pragma once

#include <concepts>
#include <string>
#include <string_view>
#include <type_traits>

#include "device/buffer.h"
#include "device/cl_error.h"
#include "device/cl_handle.h"

namespace paxocl::device {

class Program {
 public:
  Program() = default;
  Program(ClHandle<cl_program> handle, std::string name) : handle_(std::move(handle)), name_(std::move(name)) {}
  cl_program get() const { return handle_.get(); }
  const std::string& name() const { return name_; }

 private:
  ClHandle<cl_program> handle_;
  std::string name_;
};

class Kernel {
 public:
  Kernel() = default;
  Kernel(const Program& program, const std::string& kernel_name) : name_(kernel_name) {
    cl_int err = CL_SUCCESS;
    cl_kernel k = clCreateKernel(program.get(), kernel_name.c_str(), &err);
    check_cl(err, "clCreateKernel",
             "creating kernel '" + kernel_name + "' from program '" + program.name() + "'");
    handle_ = ClHandle<cl_kernel>(k);
  }
  cl_kernel get() const { return handle_.get(); }
  const std::string& name() const { return name_; }

  // Sets all arguments in order: device buffers pass their cl_mem, scalars pass by value.
  template <typename... Args>
  void set_args(const Args&... args) {
    cl_uint index = 0;
    (set_arg(index++, args), ...);
  }

 private:
  // Any device buffer (Buffer<T>, TypedBuffer): its cl_mem.
  template <typename B>
    requires requires(const B& b) { { b.get() } -> std::same_as<cl_mem>; }
  void set_arg(cl_uint index, const B& buffer) {
    cl_mem mem = buffer.get();
    set_raw(index, sizeof mem, &mem);
  }
  template <typename T>
    requires(!requires(const T& t) { { t.get() } -> std::same_as<cl_mem>; })
  void set_arg(cl_uint index, const T& value) {
    static_assert(std::is_trivially_copyable_v<T>, "kernel arguments must be buffers or plain values");
    set_raw(index, sizeof value, &value);
  }
  void set_raw(cl_uint index, std::size_t size, const void* value) {
    check_cl(clSetKernelArg(handle_.get(), index, size, value), "clSetKernelArg",
             "setting argument " + std::to_string(index) + " of kernel '" + name_ + "'");
  }

  ClHandle<cl_kernel> handle_;
  std::string name_;
};

}  // namespace paxocl::device
