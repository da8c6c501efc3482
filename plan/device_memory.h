// DeviceMemory: what one device of a layout holds during training, in bytes; the device with the
// most (fsdp shard 0, tensor rank 0: the first shards are the largest, rank 0 keeps the
// row-parallel biases). The training state is exactly what StepProgram::state_bytes_per_device()
// reports and the activations what Model::activation_bytes() does:
//   data parallel (fsdp 1): parameters, gradients, Adam m and v: 4 x P x 4 bytes, P = the floats of
//     the device's ParameterLayout (tensor rank 0's tensors, aligned);
//   FSDP (fsdp f > 1, no stage axis, scheduler/fsdp_step.h): 4 x S x 4 bytes of shards,
//     S = ShardPlan::shard_floats (every unit split over the fsdp axis's DCN parts, then its ICI
//     parts, on alignment blocks),
//     plus the resident units (FSDP gather buffers) R = unit(-1) + k block slots, parameters and
//     gradients: 2 x R x 4 bytes, k = 1 + min(FSDP_PREFETCH_DEPTH, L - 1) with
//     OVERLAP_COMMUNICATION (else 1);
//   with FPROP_DTYPE bfloat16 / float16 the weights' 16-bit copy: P (or R) x 2 bytes;
//   Adam's gradient-norm partial sums: ceil(P or S / 4096) floats (not part of the state figure);
//   activations: activation_memory.h, for the tensor group's sequences;
//   SSM blocks (FFT convolution): the device's FFT workspace, ssm_fft_scratch_floats x 4 bytes;
//   pipeline stages (stage axis p > 1, scheduler/pipeline_step.h): a device of stage s holds its
//     stage's layout (models::stage_tensor_defs: its blocks, the embedding's tensors on the first,
//     the final norm's and the head's on the last; GPT's tied wte on both) in full, 4 x P_s x 4
//     bytes plus the 16-bit copy, and microbatches_in_flight(schedule, p, s, m) model instances'
//     activations, each for one microbatch (group sequences / m) over the stage's own layers and
//     its input / output-gradient buffers (activation_memory.h), plus, with ICI_ALGORITHM=ring,
//     m staging buffers of one message (microbatch x T x C in the activation dtype, / t under
//     SEQUENCE_PARALLEL) for each neighbour on its process it receives from (device-to-device
//     messages; v - 1's activations, v + 1's gradients; devices s, t share a process when
//     s / ici_stage = t / ici_stage), counted as activations. Every figure is that of the stage
//     holding the most (the state of the largest layout, the activations of the stage with the
//     most in flight), as PipelineStep::state_bytes_per_device() and activation_bytes_per_device()
//     report them; total() bounds every stage's.
//   circular schedule (CIRCULAR_REPEAT r): the blocks split into p x r virtual stages
//     v = c x p + s of L/(p r) blocks (v = 0 the embedding, v = p r - 1 the head; GPT's tied wte on
//     both), device s holding its r chunks c = 0 .. r-1, each with its own layout (4 x P_v x 4 bytes
//     plus the 16-bit copy), its own Adam (norm partial sums) and m instances' activations (v > 0:
//     an input buffer, v < p r - 1: an output-gradient buffer). A device's figures are the sums over
//     its chunks, but the SSM FFT workspace (the device's, shared) and the largest allocation, the
//     larger chunk's; then, as above, the device holding the most. microbatches_in_flight is per
//     chunk (m), as PipelineStep::microbatches_held() reports it.
//   FSDP inside the stages (stage axis p > 1, fsdp f = ici_fsdp x dcn_fsdp > 1): the fsdp axis
//     splits the rows as the data axis does (data x f pipelines, each group_sequences()) and shards
//     only each chunk's optimizer state (ZeRO-2, scheduler/pipeline_step.h): per chunk c, its P_c
//     parameters and P_c gradients whole (every microbatch runs every block of the stage) and Adam's
//     m and v over S_c = ShardPlan::buffer_shard(P_c, alignment, dcn_fsdp, ici_fsdp, 0, 0).size()
//     (the chunk's flat buffer split as one unit, DCN part then ICI part; shard (0, 0) the largest):
//     state = sum over the device's chunks of (2 P_c + 2 S_c) x 4 bytes plus the 16-bit copy
//     P_c x 2 bytes; Adam's norm partial sums ceil(S_c / 4096) floats per chunk; no resident units;
//     the activations as for any pipeline (over the pipeline's own sequences).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "models/parameter_layout.h"
#include "plan/activation_memory.h"
#include "plan/layout_spec.h"

namespace paxocl::plan {

struct DeviceMemory {
  // P: the device's parameter layout (its tensor rank's; its chunks' summed), padding included
  std::size_t layout_floats = 0;
  std::size_t shard_floats = 0;     // S: FSDP shards (0 without FSDP; under a stage axis Adam's, its chunks' summed)
  std::size_t resident_floats = 0;  // the parameter buffer: P, or R under FSDP (P under a stage axis)
  std::size_t parameters = 0;       // float32 parameters: P x 4, or the shard S x 4 (FSDP without a stage axis)
  std::size_t gradients = 0;        // likewise
  std::size_t adam_moments = 0;     // m and v: 2 x the floats Adam updates x 4 (P, or S under FSDP)
  std::size_t fsdp_resident = 0;    // FSDP gather buffers, parameters and gradients: 2 x R x 4 (0 without FSDP)
  std::size_t weight_copy = 0;      // the 16-bit copy of the resident weights (0 for float32)
  std::size_t optimizer_workspace = 0;  // Adam's norm partial sums
  std::size_t activations = 0;      // as the layout's SEQUENCE_PARALLEL setting has it
  std::size_t activations_without_sp = 0, activations_with_sp = 0;  // equal when tensor = 1
  // SSM blocks convolving through clFFT (LayoutSpec::ssm_fft): the device's FFT workspace (kernels_cl/ssm_fft_shape.h),
  // shared by its SSM layers and allocated at the first step, so not among the activations.
  std::size_t ssm_fft_workspace = 0;
  // Pipeline stages: the model instances (microbatches) the stage with the most activations holds
  // (under the circular schedule: per chunk).
  int microbatches_in_flight = 1;
  BufferSize largest;               // the largest single allocation (CL_DEVICE_MAX_MEM_ALLOC_SIZE bounds it)

  std::size_t state() const { return parameters + gradients + adam_moments + fsdp_resident + weight_copy; }
  std::size_t total() const { return state() + optimizer_workspace + activations + ssm_fft_workspace; }
};

// The device's parameter layout: tensor rank 0's tensors, aligned as the runtime aligns them;
// under a stage axis the largest stage's (virtual stage's: one chunk under the circular schedule).
models::ParameterLayout device_layout(const LayoutSpec& spec);
// Pipeline (virtual) stage `stage`'s layout, stage < p x r (without a stage axis: device_layout's).
models::ParameterLayout stage_layout(const LayoutSpec& spec, int stage);
// The layouts device `stage` of a pipeline holds, one per chunk: virtual stages stage, stage + p,
// ... (r of them); without a stage axis device_layout's.
std::vector<models::ParameterLayout> device_layouts(const LayoutSpec& spec, int stage);
// `layout` must be device_layout(spec) (callers that try many meshes keep it; under a stage axis
// every stage's layout is built here and `layout` is not read).
DeviceMemory device_memory(const LayoutSpec& spec, const models::ParameterLayout& layout);
DeviceMemory device_memory(const LayoutSpec& spec);

// What a device offers: its memory (shared by the CPU devices of a host: their share) and its
// largest single allocation (0: no limit known).
struct MemoryLimits {
  double memory_bytes = 0;
  std::size_t max_alloc_bytes = 0;
};
// Why `memory` does not fit `limits`, in words ("needs 95.3 GiB per device, the device has 11.6 GiB;
// 'parameters' (18.8 GiB) exceeds the largest allocation, 4.0 GiB"); nothing when it fits.
std::optional<std::string> misfit(const DeviceMemory& memory, const MemoryLimits& limits);
double gib(double bytes);  // bytes / 2^30

}  // namespace paxocl::plan
