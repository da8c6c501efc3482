#include "plan/device_memory.h"

#include <algorithm>

#include <fmt/format.h>

#include "kernels_cl/ssm_fft_shape.h"
#include "models/shard_plan.h"
#include "plan/tensor_parallel.h"

namespace paxocl::plan {

using device::MeshAxis;

namespace {

std::size_t align_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

constexpr std::size_t kNormChunk = 4096;  // models::AdamOptimizer::kNormChunk: floats per partial sum

ActivationShape activation_shape(const LayoutSpec& spec, bool sequence_parallel) {
  ActivationShape s;
  s.sequences = static_cast<std::size_t>(spec.group_sequences() / spec.sub_batches);  // one sub-batch's
  s.seq_len = static_cast<std::size_t>(spec.model.max_seq_len());
  s.act = spec.fprop;
  s.tensor = spec.along(MeshAxis::kTensor);
  s.sequence_parallel = sequence_parallel && s.tensor > 1;
  s.saved = models::saved_sites(spec.checkpoint_policy, s.sequence_parallel);
  s.attention_workspace_bytes = spec.attention_workspace_bytes;
  s.flash_attention = spec.flash_attention;
  return s;
}

}  // namespace

models::ParameterLayout device_layout(const LayoutSpec& spec) {
  return models::ParameterLayout(tensor_rank_defs(spec.model, spec.along(MeshAxis::kTensor)), spec.model.num_blocks(),
                                 spec.alignment_floats());
}

DeviceMemory device_memory(const LayoutSpec& spec) { return device_memory(spec, device_layout(spec)); }

DeviceMemory device_memory(const LayoutSpec& spec, const models::ParameterLayout& layout) {
  DeviceMemory m;
  m.layout_floats = layout.total();
  const std::size_t a = layout.alignment();
  const bool fsdp = spec.along(MeshAxis::kFsdp) > 1;
  std::size_t owned = m.layout_floats;  // what the device updates: the whole layout, or its shards
  if (fsdp) {
    const models::ShardPlan shards(layout, spec.dcn_along(MeshAxis::kFsdp), spec.ici_along(MeshAxis::kFsdp));
    m.shard_floats = shards.shard_floats(0, 0);
    owned = m.shard_floats;
    const int L = spec.model.num_blocks();
    const int slots = 1 + (spec.overlap ? std::min(spec.fsdp_prefetch_depth, L - 1) : 0);
    std::size_t slot = 0;  // the largest block's unit (a hybrid's attention and SSM blocks differ)
    for (int b = 0; b < L; ++b) slot = std::max(slot, layout.unit(b).size);
    m.resident_floats = align_up(layout.unit(-1).size, a) + static_cast<std::size_t>(slots) * align_up(slot, a);
    m.fsdp_resident = 2 * m.resident_floats * sizeof(float);
  } else {
    m.resident_floats = m.layout_floats;
  }
  m.parameters = m.gradients = owned * sizeof(float);
  // FSDP's gradient accumulation sums the sub-batches' reduce-scattered shards (scheduler/fsdp_step.h).
  if (fsdp && spec.sub_batches > 1) m.gradients += m.shard_floats * sizeof(float);
  m.adam_moments = 2 * owned * sizeof(float);
  if (spec.fprop != device::DType::kF32) m.weight_copy = m.resident_floats * device::dtype_size(spec.fprop);
  m.optimizer_workspace = (owned + kNormChunk - 1) / kNormChunk * sizeof(float);

  const std::vector<BufferSize> without_sp = activation_buffers(spec.model, activation_shape(spec, false));
  const std::vector<BufferSize> with_sp = activation_buffers(spec.model, activation_shape(spec, true));
  m.activations_without_sp = total_bytes(without_sp);
  m.activations_with_sp = total_bytes(with_sp);
  const bool sp = spec.sequence_parallel && spec.along(MeshAxis::kTensor) > 1;
  m.activations = sp ? m.activations_with_sp : m.activations_without_sp;
  if (spec.model.is_gpt() && spec.model.gpt().ssm_blocks() > 0 && spec.model.gpt().ssm.convolution == "fft") {
    const ActivationShape shape = activation_shape(spec, false);
    m.ssm_fft_workspace = kernels::ssm_fft_scratch_floats(shape.sequences, shape.seq_len,
                                                          static_cast<std::size_t>(spec.model.gpt().model_dims)) *
                          sizeof(float);
  }

  // The largest allocation: a state buffer (the model's parameter buffer first, as it is allocated
  // first and is what the runtime names when it fails) or an activation.
  std::vector<BufferSize> state = {{"parameters", m.resident_floats * sizeof(float), 1}};
  if (fsdp) state.push_back({"parameter shard", m.shard_floats * sizeof(float), 1});
  if (m.weight_copy > 0) state.push_back({"parameters.compute", m.weight_copy, 1});
  state.push_back(largest(sp ? with_sp : without_sp));
  m.largest = largest(state);
  return m;
}

double gib(double bytes) { return bytes / (1024.0 * 1024.0 * 1024.0); }

std::optional<std::string> misfit(const DeviceMemory& memory, const MemoryLimits& limits) {
  const double need = static_cast<double>(memory.total());
  const bool too_much = need > limits.memory_bytes;
  const bool too_large = limits.max_alloc_bytes > 0 && memory.largest.bytes > limits.max_alloc_bytes;
  if (!too_much && !too_large) return std::nullopt;
  std::string why = fmt::format("needs {:.1f} GiB per device (training state {:.1f} GiB, activations {:.1f} GiB), the "
                                "device has {:.1f} GiB",
                                gib(need), gib(static_cast<double>(memory.state())),
                                gib(static_cast<double>(memory.activations)), gib(limits.memory_bytes));
  if (too_large) {
    why += fmt::format("; its largest buffer '{}' ({:.1f} GiB) exceeds the largest allocation, {:.1f} GiB",
                       memory.largest.name, gib(static_cast<double>(memory.largest.bytes)),
                       gib(static_cast<double>(limits.max_alloc_bytes)));
  }
  return why;
}

}  // namespace paxocl::plan
