#include "plan/device_memory.h"

#include <algorithm>

#include <fmt/format.h>

#include "kernels_cl/ssm_fft_shape.h"
#include "models/shard_plan.h"
#include "models/stage_split.h"
#include "plan/tensor_parallel.h"

namespace paxocl::plan {

using device::MeshAxis;

namespace {

std::size_t align_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

constexpr std::size_t kNormChunk = 4096;  // models::AdamOptimizer::kNormChunk: floats per partial sum

// A stage axis of 1 is the whole model (BlockModel's rule).
models::StageSpan whole_model(const LayoutSpec& spec) { return models::stage_span(spec.model.num_blocks(), 1, 0); }

// Virtual stage v's blocks: chunk v / p of device v mod p (models/pipeline_schedule.h).
models::StageSpan chunk_span(const LayoutSpec& spec, int v) {
  return models::stage_span(spec.model.num_blocks(), spec.virtual_stages(), v);
}

ActivationShape activation_shape(const LayoutSpec& spec, bool sequence_parallel, const models::StageSpan& stage) {
  ActivationShape s;
  // One sub-batch's or one microbatch's sequences (never both: a pipeline refuses sub-batches).
  s.sequences = static_cast<std::size_t>(spec.group_sequences() / spec.sub_batches / spec.microbatches());
  s.seq_len = static_cast<std::size_t>(spec.model.max_seq_len());
  s.act = spec.fprop;
  s.tensor = spec.along(MeshAxis::kTensor);
  s.sequence_parallel = sequence_parallel && s.tensor > 1;
  s.saved = models::saved_sites(spec.checkpoint_policy, s.sequence_parallel);
  s.attention_workspace_bytes = spec.attention_workspace_bytes;
  s.flash_attention = spec.flash_attention;
  s.stage = stage;
  return s;
}

// Virtual stage v's staging buffers for messages from neighbours on its process (ICI_ALGORITHM=ring:
// one context), PipelineStep's direct channels: m for the activations from v - 1, m for the
// gradients from v + 1 (device s = v mod p; devices s and t share a process when s / ici = t / ici).
std::size_t stage_message_buffers(const LayoutSpec& spec, int v) {
  if (!spec.ici_ring) return 0;
  const int p = spec.stages(), ici = spec.ici_along(MeshAxis::kStage), s = v % p;
  auto on_this_process = [&](int t) { return s / ici == t / ici; };
  std::size_t buffers = 0;
  if (v > 0 && on_this_process((v - 1) % p)) buffers += static_cast<std::size_t>(spec.microbatches());
  if (v + 1 < spec.virtual_stages() && on_this_process((v + 1) % p)) buffers += static_cast<std::size_t>(spec.microbatches());
  return buffers;
}

bool has_ssm_blocks(const LayoutSpec& spec, const models::StageSpan& stage) {
  if (!spec.model.is_gpt()) return false;
  for (int l = stage.first; l < stage.end; ++l) {
    if (spec.model.gpt().block_kind(l) == models::BlockKind::kSsm) return true;
  }
  return false;
}

// One device holding `stage`'s blocks (the whole model without a stage axis) with `layout`.
DeviceMemory stage_memory(const LayoutSpec& spec, const models::ParameterLayout& layout,
                          const models::StageSpan& stage) {
  DeviceMemory m;
  m.layout_floats = layout.total();
  const std::size_t a = layout.alignment();
  const bool pipeline = spec.stages() > 1;
  // FSDP inside a pipeline stage shards only the optimizer (ZeRO-2); without a stage axis everything (ZeRO-3).
  const bool fsdp = spec.along(MeshAxis::kFsdp) > 1 && !pipeline;
  const bool sharded_optimizer = spec.along(MeshAxis::kFsdp) > 1 && pipeline;
  std::size_t owned = m.layout_floats;  // what the device's Adam updates: the whole layout, or its shards
  if (sharded_optimizer) {
    // The chunk's whole flat buffer split as one unit; shard (0, 0) is the largest.
    m.shard_floats = models::ShardPlan::buffer_shard(m.layout_floats, a, spec.dcn_along(MeshAxis::kFsdp),
                                                     spec.ici_along(MeshAxis::kFsdp), 0, 0)
                         .size();
    owned = m.shard_floats;
    m.resident_floats = m.layout_floats;
  } else if (fsdp) {
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
  // Parameters and gradients: the shards under FSDP, else whole (a pipeline's stay whole under its fsdp axis).
  m.parameters = m.gradients = (fsdp ? owned : m.layout_floats) * sizeof(float);
  // FSDP's gradient accumulation sums the sub-batches' reduce-scattered shards (scheduler/fsdp_step.h).
  if (fsdp && spec.sub_batches > 1) m.gradients += m.shard_floats * sizeof(float);
  m.adam_moments = 2 * owned * sizeof(float);
  if (spec.fprop != device::DType::kF32) m.weight_copy = m.resident_floats * device::dtype_size(spec.fprop);
  m.optimizer_workspace = (owned + kNormChunk - 1) / kNormChunk * sizeof(float);

  // A pipeline stage keeps one model instance per microbatch in flight (scheduler/pipeline_step.h),
  // counted for its device (v mod p) and per chunk.
  m.microbatches_in_flight = spec.stages() > 1 ? models::microbatches_in_flight(spec.schedule, spec.stages(),
                                                                                stage.stage % spec.stages(),
                                                                                spec.microbatches())
                                               : 1;
  const auto instances = static_cast<std::size_t>(m.microbatches_in_flight);
  const std::vector<BufferSize> without_sp = activation_buffers(spec.model, activation_shape(spec, false, stage));
  const std::vector<BufferSize> with_sp = activation_buffers(spec.model, activation_shape(spec, true, stage));
  m.activations_without_sp = instances * total_bytes(without_sp);
  m.activations_with_sp = instances * total_bytes(with_sp);
  if (spec.stages() > 1) {  // the staging buffers of its device-to-device channels (it receives on them)
    const std::size_t staging = stage_message_buffers(spec, stage.stage);
    const std::size_t message = static_cast<std::size_t>(spec.microbatch_sequences()) *
                                static_cast<std::size_t>(spec.model.max_seq_len()) *
                                static_cast<std::size_t>(spec.model.visit([](const auto& c) { return c.model_dims; })) *
                                device::dtype_size(spec.fprop);
    m.activations_without_sp += staging * message;
    m.activations_with_sp += staging * (message / static_cast<std::size_t>(spec.along(MeshAxis::kTensor)));
  }
  const bool sp = spec.sequence_parallel && spec.along(MeshAxis::kTensor) > 1;
  m.activations = sp ? m.activations_with_sp : m.activations_without_sp;
  if (has_ssm_blocks(spec, stage)) {
    const ActivationShape shape = activation_shape(spec, false, stage);
    const std::string& convolution = spec.model.gpt().ssm.convolution;
    if (spec.ssm_fft ? spec.ssm_fft(convolution, shape.seq_len) : convolution != "direct") {
      m.ssm_fft_workspace = kernels::ssm_fft_scratch_floats(shape.sequences, shape.seq_len,
                                                            static_cast<std::size_t>(spec.model.gpt().model_dims)) *
                            sizeof(float);
    }
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

// A device's chunks under the circular schedule: each has its own layout, instances and optimizer,
// so their figures add up; the SSM FFT workspace is the device's (shared by every chunk's layers)
// and an allocation is one chunk's, so those are the larger one.
void add_chunk(DeviceMemory& device, const DeviceMemory& chunk) {
  device.layout_floats += chunk.layout_floats;
  device.shard_floats += chunk.shard_floats;
  device.resident_floats += chunk.resident_floats;
  device.parameters += chunk.parameters;
  device.gradients += chunk.gradients;
  device.adam_moments += chunk.adam_moments;
  device.fsdp_resident += chunk.fsdp_resident;
  device.weight_copy += chunk.weight_copy;
  device.optimizer_workspace += chunk.optimizer_workspace;
  device.activations += chunk.activations;
  device.activations_without_sp += chunk.activations_without_sp;
  device.activations_with_sp += chunk.activations_with_sp;
  device.ssm_fft_workspace = std::max(device.ssm_fft_workspace, chunk.ssm_fft_workspace);
  device.microbatches_in_flight = std::max(device.microbatches_in_flight, chunk.microbatches_in_flight);
  if (chunk.largest.bytes > device.largest.bytes) device.largest = chunk.largest;
}

// Under a stage axis: every device, each the sum over its chunks (one but under the circular
// schedule), and each figure that of the device holding the most, as PipelineStep reports them
// (the state of the largest layouts, the activations of the device with the most held), so
// total() bounds every device's.
DeviceMemory pipeline_memory(const LayoutSpec& spec) {
  auto chunk = [&](int v) { return stage_memory(spec, stage_layout(spec, v), chunk_span(spec, v)); };
  std::vector<DeviceMemory> devices;
  for (int s = 0; s < spec.stages(); ++s) {
    DeviceMemory device = chunk(s);
    for (int c = 1; c < spec.repeat; ++c) add_chunk(device, chunk(c * spec.stages() + s));
    devices.push_back(device);
  }
  auto most = [&](auto figure) {
    return *std::max_element(devices.begin(), devices.end(),
                             [&](const DeviceMemory& x, const DeviceMemory& y) { return figure(x) < figure(y); });
  };
  DeviceMemory m = most([](const DeviceMemory& d) { return d.state(); });
  const DeviceMemory held = most([](const DeviceMemory& d) { return d.activations; });
  m.activations = held.activations;
  m.activations_without_sp = held.activations_without_sp;
  m.activations_with_sp = held.activations_with_sp;
  m.microbatches_in_flight = held.microbatches_in_flight;
  m.ssm_fft_workspace = most([](const DeviceMemory& d) { return d.ssm_fft_workspace; }).ssm_fft_workspace;
  m.largest = most([](const DeviceMemory& d) { return d.largest.bytes; }).largest;
  return m;
}

}  // namespace

models::ParameterLayout stage_layout(const LayoutSpec& spec, int stage) {
  const models::StageSpan span = spec.stages() > 1 ? chunk_span(spec, stage) : whole_model(spec);
  const std::vector<models::TensorDef> defs = tensor_rank_defs(spec.model, spec.along(MeshAxis::kTensor));
  return models::ParameterLayout(models::stage_tensor_defs(defs, span), span.blocks(), spec.alignment_floats());
}

models::ParameterLayout device_layout(const LayoutSpec& spec) {
  if (spec.stages() == 1) {
    return models::ParameterLayout(tensor_rank_defs(spec.model, spec.along(MeshAxis::kTensor)), spec.model.num_blocks(),
                                   spec.alignment_floats());
  }
  std::optional<models::ParameterLayout> most;
  for (int v = 0; v < spec.virtual_stages(); ++v) {
    models::ParameterLayout layout = stage_layout(spec, v);
    if (!most || layout.total() > most->total()) most.emplace(std::move(layout));
  }
  return *most;
}

std::vector<models::ParameterLayout> device_layouts(const LayoutSpec& spec, int stage) {
  if (spec.stages() == 1) return {device_layout(spec)};
  std::vector<models::ParameterLayout> layouts;
  for (int c = 0; c < spec.repeat; ++c) layouts.push_back(stage_layout(spec, c * spec.stages() + stage));
  return layouts;
}

DeviceMemory device_memory(const LayoutSpec& spec) { return device_memory(spec, device_layout(spec)); }

DeviceMemory device_memory(const LayoutSpec& spec, const models::ParameterLayout& layout) {
  if (spec.stages() > 1) return pipeline_memory(spec);
  return stage_memory(spec, layout, whole_model(spec));
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
