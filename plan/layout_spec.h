// LayoutSpec: what `pax-ocl plan` plans for, resolved once into typed fields: the model, the mesh
// (ICI_MESH_SHAPE x DCN_MESH_SHAPE over [stage, data, fsdp, tensor]), the global batch and the
// precision, and the settings of the step programs that change memory (FSDP_PREFETCH_DEPTH,
// OVERLAP_COMMUNICATION, SEQUENCE_PARALLEL, the pipeline's microbatches, schedule and
// CIRCULAR_REPEAT). Nothing here
// opens a device.
//   batch: the global batch is PERCORE_BATCH_SIZE x every device of the mesh (config/job_config.cpp);
//   the data x fsdp groups split it, and the t devices of a tensor group (the p stages of a
//   pipeline) run their group's sequences together (PERCORE_BATCH_SIZE x t, or x p, of them), so
//   PERCORE may be fractional under TP; a pipeline runs its sequences as m microbatches
//   (config/pipeline_rules.h, the job's rules).
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "config/experiment.h"
#include "device/dtype.h"
#include "device/mesh.h"
#include "models/checkpoint_policy.h"
#include "models/model_config.h"
#include "models/pipeline_schedule.h"

namespace paxocl::plan {

struct LayoutSpec {
  models::ModelConfig model;
  device::MeshShape ici{1, 1, 1};  // devices of a process along [stage, data, fsdp, tensor]
  device::MeshShape dcn{1, 1, 1};  // processes along [stage, data, fsdp, tensor]
  long global_batch = 1;           // sequences per step, the whole mesh
  device::DType fprop = device::DType::kF32;  // FPROP_DTYPE: activations and the weights' step copy
  bool fprop_auto = false;  // FPROP_DTYPE=auto, planned as float32 (what it resolves to on all but bf16 CPUs)
  int fsdp_prefetch_depth = 1;     // FSDP_PREFETCH_DEPTH
  bool overlap = true;             // OVERLAP_COMMUNICATION
  // ICI_ALGORITHM=ring: a process's devices share a context (one platform assumed), so neighbouring
  // pipeline stages on it send device to device, through staging buffers (scheduler/pipeline_step.h).
  bool ici_ring = true;
  bool sequence_parallel = false;  // SEQUENCE_PARALLEL (tensor > 1): norms and residuals on sequence shards
  // CHECKPOINT_POLICY: the forward results each block keeps (models/checkpoint_policy.h)
  models::CheckpointPolicy checkpoint_policy = models::CheckpointPolicy::kSaveEverything;
  int sub_batches = 1;  // NUM_SUB_BATCHES: a group's sequences run as this many sub-batches (activations of one)
  // Whether the experiment or the command line chose them (else the plan may: plan.h's memory choice).
  bool checkpoint_policy_given = true, sub_batches_given = true;
  // Pipeline parallelism (a stage axis > 1): the microbatch settings as given (0: not given; neither
  // given: one sequence per microbatch, so a layout search's candidates re-derive the count for
  // their own pipeline batch), PIPELINE_SCHEDULE and CIRCULAR_REPEAT (r chunks of blocks per
  // stage, > 1 only under the circular schedule). The job passes its resolved count.
  long num_microbatches = 0;  // NUM_MICROBATCHES
  long microbatch_size = 0;   // MICROBATCH_SIZE
  models::PipelineSchedule schedule = models::PipelineSchedule::kOneForwardOneBackward;
  int repeat = 1;             // CIRCULAR_REPEAT
  // The device's CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes, which sets the parameter layout's alignment
  // (models/block_model.cpp); PoCL reports 128.
  std::size_t base_address_align_bytes = 128;
  // The attention score workspace bound each model is built with (scheduler/step_program.cpp).
  std::size_t attention_workspace_bytes = std::size_t{64} << 20;
  // Whether the devices run attention of a head size as flash attention of either kind
  // (kernels::fused_attention: the GPU set's kernels where tiles fit local memory, the host's on CPU
  // devices with the CPU set), which allocates no score workspace. Empty: never.
  std::function<bool(std::size_t head_size)> flash_attention;
  // Whether the devices run SSM convolutions of T positions with SSM_CONVOLUTION=`convolution`
  // through clFFT, which allocates the FFT workspace (kernels::ssm_fft_requested: it depends on the
  // kernel set). Empty: wherever SSM_CONVOLUTION is not direct (auto as on a GPU).
  std::function<bool(const std::string& convolution, std::size_t seq_len)> ssm_fft;

  int along(device::MeshAxis axis) const;  // the global mesh's size along `axis`: ici x dcn
  int ici_along(device::MeshAxis axis) const { return ici[static_cast<std::size_t>(axis)]; }
  int dcn_along(device::MeshAxis axis) const { return dcn[static_cast<std::size_t>(axis)]; }
  int devices() const { return device::mesh_devices(ici, dcn); }
  int processes() const { return device::product(dcn); }
  int stages() const { return along(device::MeshAxis::kStage); }
  // A pipeline's virtual stages p x r (models/pipeline_schedule.h): device s holds s, s + p, ...
  int virtual_stages() const { return stages() * repeat; }
  // Sequences one tensor group or pipeline (so each of its devices) runs per step:
  // global_batch / (data x fsdp).
  long group_sequences() const;
  // A pipeline's microbatches m (config::pipeline_microbatches; 1 without a stage axis) and the
  // sequences of each, group_sequences() / m. ConfigError as validate() for settings it refuses.
  int microbatches() const;
  long microbatch_sequences() const { return group_sequences() / microbatches(); }
  bool microbatches_given() const { return num_microbatches > 0 || microbatch_size > 0; }
  // The parameter layout's alignment in floats, as BlockModel computes it for this dtype and device.
  std::size_t alignment_floats() const;
  // ConfigError naming the numbers: a mesh dimension below 1, a global batch that is not whole
  // sequences per tensor group, a tensor size that cannot split the model (tensor_parallel.h),
  // NUM_SUB_BATCHES not dividing a group's sequences, and what the job refuses of a stage axis
  // (config/pipeline_rules.h) and of SEQUENCE_PARALLEL's rows per pass (config/sequence_parallel_rules.h),
  // in the same words.
  void validate() const;
  // "data 1 x fsdp 256 x tensor 1 = 256 devices (ICI [1,8,1] x DCN [1,32,1], 32 processes)"; with a
  // stage axis "stage 4 x data 2 x fsdp 1 x tensor 1 = 8 devices (...)", and with CIRCULAR_REPEAT r > 1
  // "(..., 1 process; r chunks per stage)".
  std::string describe() const;
  // The --fdl flags that select this layout: "--fdl.ICI_MESH_SHAPE=[1,8,1] --fdl.DCN_MESH_SHAPE=[1,32,1]
  // --fdl.PERCORE_BATCH_SIZE=6" (and SEQUENCE_PARALLEL when it is on, CHECKPOINT_POLICY when it is not
  // SAVE_EVERYTHING, NUM_SUB_BATCHES when it is not 1, NUM_MICROBATCHES and PIPELINE_SCHEDULE with a
  // stage axis, and then CIRCULAR_REPEAT when it is not 1).
  std::string flags() const;
};

// The experiment's layout: its model (validated), ICI_MESH_SHAPE, DCN_MESH_SHAPE,
// PERCORE_BATCH_SIZE, FPROP_DTYPE, FSDP_PREFETCH_DEPTH, OVERLAP_COMMUNICATION, NUM_MICROBATCHES,
// MICROBATCH_SIZE, PIPELINE_SCHEDULE and, when the schema has them, SEQUENCE_PARALLEL,
// CHECKPOINT_POLICY, NUM_SUB_BATCHES and CIRCULAR_REPEAT (CHECKPOINT_POLICY and NUM_SUB_BATCHES
// given when a --fdl flag or the experiment sets them other than SAVE_EVERYTHING and 1).
// ConfigError (one line) for anything LayoutSpec::validate refuses, or a PERCORE_BATCH_SIZE that is
// not a whole global batch.
LayoutSpec layout_spec_of(const config::Experiment& experiment);

}  // namespace paxocl::plan
