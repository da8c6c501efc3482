#include "models/layers/buffer_source.h"

#include <stdexcept>

#include <fmt/format.h>

namespace paxocl::models {

device::TypedBuffer SharedActivations::view(const std::string& role, device::DType dtype, std::size_t count) {
  auto it = buffers_.find(role);
  if (it == buffers_.end()) {
    it = buffers_.emplace(role, device::TypedBuffer(device_.context(), dtype, count, "shared " + role)).first;
  }
  const device::TypedBuffer& whole = it->second;
  if (whole.dtype() != dtype || whole.count() != count) {
    throw std::logic_error(fmt::format("shared activation '{}': asked for {} elements of {} bytes, holds {} of {}", role,
                                       count, device::dtype_size(dtype), whole.count(), device::dtype_size(whole.dtype())));
  }
  // The same cl_mem, not a sub-buffer: PoCL 5's rectangular copies from a sub-buffer crash (the
  // decoding key/value cache's copy_rows), and a whole-buffer view needs none.
  return whole.same_memory();
}

BufferSource BufferSource::at(BlockSite site) const {
  BufferSource other = *this;
  other.site_ = site;
  return other;
}

device::TypedBuffer BufferSource::make(bool shared, device::DType dtype, std::size_t count,
                                       const std::string& label) const {
  if (!shared || shared_ == nullptr) return device::TypedBuffer(device_->context(), dtype, count, label);
  const std::string lead = prefix_ + ".";
  if (label.compare(0, lead.size(), lead) != 0) {
    throw std::logic_error(fmt::format("activation '{}' is not labelled with its block's prefix '{}'", label, prefix_));
  }
  return shared_->view(label.substr(lead.size()), dtype, count);
}

device::TypedBuffer BufferSource::saved(device::DType dtype, std::size_t count, const std::string& label) const {
  return make(!saved_.has(site_), dtype, count, label);
}
device::Buffer<float> BufferSource::saved(std::size_t count, const std::string& label) const {
  return saved(device::DType::kF32, count, label).floats();
}
device::TypedBuffer BufferSource::transient(device::DType dtype, std::size_t count, const std::string& label) const {
  return make(true, dtype, count, label);
}
device::Buffer<float> BufferSource::transient(std::size_t count, const std::string& label) const {
  return transient(device::DType::kF32, count, label).floats();
}

}  // namespace paxocl::models
