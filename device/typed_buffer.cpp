#include "device/typed_buffer.h"

#include <stdexcept>

#include "device/queue.h"

namespace paxocl::device {

Buffer<float> TypedBuffer::floats() const {
  if (dtype_ != DType::kF32) throw std::logic_error("TypedBuffer::floats() of a 16-bit buffer");
  if (get() == nullptr) return {};
  cl_int err = clRetainMemObject(get());
  check_cl(err, "clRetainMemObject", "viewing an activation buffer as floats");
  return Buffer<float>::adopt(get(), count_);
}

TypedBuffer TypedBuffer::sharing(const Buffer<float>& floats) {
  TypedBuffer t;
  // A whole-buffer view of the same memory: retains it, and has byte-counted storage.
  Buffer<std::byte> bytes;
  if (floats.get() != nullptr) {
    cl_int err = clRetainMemObject(floats.get());
    check_cl(err, "clRetainMemObject", "sharing a float buffer");
    bytes = Buffer<std::byte>::adopt(floats.get(), floats.bytes());
  }
  t.storage_ = std::move(bytes);
  t.dtype_ = DType::kF32;
  t.count_ = floats.count();
  return t;
}

TypedBuffer TypedBuffer::same_memory() const {
  TypedBuffer t;
  if (get() != nullptr) {
    cl_int err = clRetainMemObject(get());
    check_cl(err, "clRetainMemObject", "sharing an activation buffer");
    t.storage_ = Buffer<std::byte>::adopt(get(), storage_.bytes());
  }
  t.dtype_ = dtype_;
  t.count_ = count_;
  return t;
}

TypedBuffer TypedBuffer::view(std::size_t offset, std::size_t count, const std::string& name) const {
  TypedBuffer t;
  const std::size_t size = dtype_size(dtype_);
  t.storage_ = storage_.view(offset * size, count * size, name);
  t.dtype_ = dtype_;
  t.count_ = count;
  return t;
}

void TypedBuffer::write(Queue& queue, std::span<const float> values) const {
  const std::vector<std::byte> bytes = encode(dtype_, values.first(std::min(values.size(), count_)));
  queue.write(storage_, std::span<const std::byte>(bytes));
}

std::vector<float> TypedBuffer::read(Queue& queue) const {
  std::vector<std::byte> bytes(storage_.bytes());
  queue.read(storage_, std::span<std::byte>(bytes));
  return decode(dtype_, bytes);
}

}  // namespace paxocl::device
