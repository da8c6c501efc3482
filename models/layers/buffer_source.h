// BufferSource: where a layer gets its activation buffers. A layer asks for each by the part it plays:
//   saved(...)      forward results its backward reads (outputs, row statistics): kept per block
//                   when the checkpoint policy keeps the layer's site (models/checkpoint_policy.h)
//   transient(...)  what lives only inside one call or one block's backward (input gradients,
//                   score workspaces)
// A buffer that is not kept per block is shared by every block of the model: one allocation per
// role, the label without its block prefix ("h3.qkv.dx" -> "qkv.dx"), viewed by each block's layer
// and holding the data of the block that ran last. Transient buffers are always shared (a block's
// backward reads only its own and its caller's: TransformerBlock::backward); saved ones are
// shared under rematerialization, and then recomputed before the block's backward.
// Outside the blocks (the embedding, the final norm, the LM head) and in tests a layer gets a
// source from its device (implicitly): every buffer its own.
// Allocations count into the context's bytes_allocated() once per role (views do not).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "device/device.h"
#include "device/typed_buffer.h"
#include "models/checkpoint_policy.h"

namespace paxocl::models {

// The buffers the blocks of one model share, by role.
class SharedActivations {
 public:
  explicit SharedActivations(const device::Device& device) : device_(device) {}
  // A handle on the role's buffer (its memory, not a copy): allocated by the first request; a later
  // one of another dtype or size is a logic_error (every block's layer of a role has the same shape).
  device::TypedBuffer view(const std::string& role, device::DType dtype, std::size_t count);

 private:
  const device::Device& device_;
  std::map<std::string, device::TypedBuffer> buffers_;
};

class BufferSource {
 public:
  // Every buffer the layer's own (outside the blocks; tests).
  BufferSource(const device::Device& device) : device_(&device) {}  // NOLINT(google-explicit-constructor)
  // A layer of the block labelled `block_prefix` ("h3"), storing at `site`; `saved` is the policy's set.
  BufferSource(const device::Device& device, SharedActivations& shared, std::string block_prefix, SavedSites saved,
               BlockSite site)
      : device_(&device), shared_(&shared), prefix_(std::move(block_prefix)), saved_(saved), site_(site) {}

  // The same block's source for another site (a layer made of several: SwigluMlp's projections).
  BufferSource at(BlockSite site) const;

  device::TypedBuffer saved(device::DType dtype, std::size_t count, const std::string& label) const;
  device::Buffer<float> saved(std::size_t count, const std::string& label) const;
  device::TypedBuffer transient(device::DType dtype, std::size_t count, const std::string& label) const;
  device::Buffer<float> transient(std::size_t count, const std::string& label) const;
  const device::Device& device() const { return *device_; }

 private:
  device::TypedBuffer make(bool shared, device::DType dtype, std::size_t count, const std::string& label) const;

  const device::Device* device_;
  SharedActivations* shared_ = nullptr;  // null: every buffer own
  std::string prefix_;
  SavedSites saved_{};
  BlockSite site_ = BlockSite::kLayerOut;
};

}  // namespace paxocl::models
