// TypedBuffer: RAII device memory holding `count` elements of a DType chosen at run time, for
// what mixed precision stores in 16 bits (activations, the per-step copy of the weights) and in
// float32 otherwise. Kernels see it as a pointer to act_t (kernels_cl/dtype.cl) of a program
// built for the same DType.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "device/buffer.h"
#include "device/dtype.h"

namespace paxocl::device {

class Queue;

class TypedBuffer {
 public:
  TypedBuffer() = default;
  TypedBuffer(const Context& context, DType dtype, std::size_t count, const std::string& name)
      : storage_(context, count * dtype_size(dtype), name), dtype_(dtype), count_(count) {}
  // A float32 view sharing `floats`' memory (retains it; no copy).
  static TypedBuffer sharing(const Buffer<float>& floats);
  // The inverse, for a float32 buffer: the same memory as Buffer<float> (logic_error for 16-bit).
  Buffer<float> floats() const;

  // Another handle on the same memory (retains it; no copy, no sub-buffer, not counted again).
  TypedBuffer same_memory() const;
  // A sub-buffer aliasing elements [offset, offset + count) (see Buffer::view for alignment).
  TypedBuffer view(std::size_t offset, std::size_t count, const std::string& name) const;

  cl_mem get() const { return storage_.get(); }
  const Buffer<std::byte>& storage() const { return storage_; }  // the raw bytes (device-side copies)
  DType dtype() const { return dtype_; }
  std::size_t count() const { return count_; }
  std::size_t bytes() const { return storage_.bytes(); }

  // Blocking host transfers of float values (converted on the host, bit-exact with the kernels).
  void write(Queue& queue, std::span<const float> values) const;
  std::vector<float> read(Queue& queue) const;

 private:
  Buffer<std::byte> storage_;
  DType dtype_ = DType::kF32;
  std::size_t count_ = 0;
};

}  // namespace paxocl::device
