#include "plan/layout_spec.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "common/errors.h"
#include "config/pipeline_rules.h"
#include "config/sequence_parallel_rules.h"
#include "plan/tensor_parallel.h"

namespace paxocl::plan {

using device::MeshAxis;

int LayoutSpec::along(MeshAxis axis) const { return ici_along(axis) * dcn_along(axis); }

long LayoutSpec::group_sequences() const {
  return global_batch / (static_cast<long>(along(MeshAxis::kData)) * along(MeshAxis::kFsdp));
}

int LayoutSpec::microbatches() const {
  config::PipelineRequest r;
  r.stages = stages();
  r.blocks = model.num_blocks();
  r.batch = group_sequences();
  r.percore_batch = static_cast<double>(global_batch) / devices();
  r.sub_batches = sub_batches;
  r.num_microbatches = num_microbatches;
  r.microbatch_size = microbatch_size;
  r.circular = schedule == models::PipelineSchedule::kCircular;
  r.repeat = repeat;
  return config::pipeline_microbatches(r);
}

std::size_t LayoutSpec::alignment_floats() const {
  // BlockModel's rule: sub-buffers of both the float32 tensors and their views in the fprop copy
  // start on the device's base address alignment; at least 64 elements.
  const std::size_t smallest = std::min(sizeof(float), device::dtype_size(fprop));
  return std::max<std::size_t>(64, base_address_align_bytes / smallest);
}

void LayoutSpec::validate() const {
  for (std::size_t a = 0; a < device::kNumMeshAxes; ++a) {
    if (ici[a] < 1 || dcn[a] < 1) {
      throw ConfigError(fmt::format("ICI_MESH_SHAPE={} x DCN_MESH_SHAPE={}: every mesh dimension must be at least 1",
                                    device::to_string(ici), device::to_string(dcn)));
    }
  }
  model.validate();
  const long groups = static_cast<long>(along(MeshAxis::kData)) * along(MeshAxis::kFsdp);
  if (global_batch < 1 || global_batch % groups != 0) {
    throw ConfigError(fmt::format("a global batch of {} sequences does not split into {} data x fsdp groups of whole "
                                  "sequences; choose PERCORE_BATCH_SIZE so that it does",
                                  global_batch, groups));
  }
  if (const auto e = tensor_split_error(model, along(MeshAxis::kTensor))) throw ConfigError(*e);
  if (fsdp_prefetch_depth < 0) throw ConfigError(fmt::format("FSDP_PREFETCH_DEPTH={}: must be >= 0", fsdp_prefetch_depth));
  if (sub_batches < 1 || group_sequences() % sub_batches != 0) {
    throw ConfigError(fmt::format("NUM_SUB_BATCHES={} does not divide the {} sequences each model replica runs per step; "
                                  "choose a divisor of {}",
                                  sub_batches, group_sequences(), group_sequences()));
  }
  const int m = microbatches();  // a stage axis's refusals
  if (sequence_parallel) {  // the job's rule, in its words (a tensor axis of 1 leaves it off: flags())
    config::SequenceParallelRequest r;
    r.tensor = along(MeshAxis::kTensor);
    r.batch = group_sequences();
    r.seq_len = static_cast<long>(model.max_seq_len());
    r.sub_batches = sub_batches;
    r.stages = stages();
    r.microbatches = m;
    config::check_sequence_parallel_rows(r);
  }
}

std::string LayoutSpec::describe() const {
  return fmt::format("{}data {} x fsdp {} x tensor {} = {} device{} (ICI {} x DCN {}, {} process{}{})",
                     stages() > 1 ? fmt::format("stage {} x ", stages()) : std::string(), along(MeshAxis::kData),
                     along(MeshAxis::kFsdp), along(MeshAxis::kTensor), devices(),
                     devices() == 1 ? "" : "s", device::to_string(ici), device::to_string(dcn), processes(),
                     processes() == 1 ? "" : "es",
                     stages() > 1 && repeat > 1 ? fmt::format("; {} chunks per stage", repeat) : std::string());
}

std::string LayoutSpec::flags() const {
  const double percore = static_cast<double>(global_batch) / devices();
  return fmt::format("--fdl.ICI_MESH_SHAPE={} --fdl.DCN_MESH_SHAPE={} --fdl.PERCORE_BATCH_SIZE={:.10g}{}{}{}{}",
                     device::to_string(ici), device::to_string(dcn), percore,
                     sequence_parallel && along(MeshAxis::kTensor) > 1 ? " --fdl.SEQUENCE_PARALLEL=true" : "",
                     models::rematerializes(checkpoint_policy)
                         ? fmt::format(" --fdl.CHECKPOINT_POLICY={}", models::checkpoint_policy_name(checkpoint_policy))
                         : std::string(),
                     sub_batches > 1 ? fmt::format(" --fdl.NUM_SUB_BATCHES={}", sub_batches) : std::string(),
                     stages() > 1 ? fmt::format(" --fdl.NUM_MICROBATCHES={} --fdl.PIPELINE_SCHEDULE={}{}",
                                                microbatches(), models::pipeline_schedule_name(schedule),
                                                repeat > 1 ? fmt::format(" --fdl.CIRCULAR_REPEAT={}", repeat)
                                                           : std::string())
                                  : std::string());
}

namespace {

device::MeshShape mesh_shape(const config::Experiment& e, const char* field) {
  return device::mesh_shape_from(e.get_int_list(field), field);
}

bool has_field(const std::string& name) {
  const auto& schema = config::Experiment::schema();
  return std::any_of(schema.begin(), schema.end(), [&](const config::HParamSpec& s) { return s.name == name; });
}

}  // namespace

LayoutSpec layout_spec_of(const config::Experiment& e) {
  LayoutSpec s;
  s.model = e.model_config();
  s.ici = mesh_shape(e, "ICI_MESH_SHAPE");
  s.dcn = mesh_shape(e, "DCN_MESH_SHAPE");
  const double percore = e.get_float("PERCORE_BATCH_SIZE");
  const double global = percore * s.devices();
  if (!(global >= 1) || std::abs(global - std::round(global)) > 1e-6) {
    throw ConfigError(fmt::format("PERCORE_BATCH_SIZE={} x {} device(s) = {} is not a whole global batch; choose "
                                  "PERCORE_BATCH_SIZE so that it is",
                                  percore, s.devices(), global));
  }
  s.global_batch = std::lround(global);
  // auto is resolved against a job's devices at start-up (device/auto_fprop_dtype.h); a plan has none
  // and plans float32, saying so.
  s.fprop_auto = e.get_string("FPROP_DTYPE") == "auto";
  s.fprop = s.fprop_auto ? device::DType::kF32 : device::dtype_from_name(e.get_string("FPROP_DTYPE"));
  s.fsdp_prefetch_depth = static_cast<int>(e.get_int("FSDP_PREFETCH_DEPTH"));
  s.overlap = e.get_bool("OVERLAP_COMMUNICATION");
  s.ici_ring = e.get_string("ICI_ALGORITHM") == "ring";
  // Sequence parallelism arrives with tensor parallelism (issue 20); until the experiment has it, off.
  if (has_field("SEQUENCE_PARALLEL")) s.sequence_parallel = e.get_bool("SEQUENCE_PARALLEL");
  if (has_field("CHECKPOINT_POLICY")) s.checkpoint_policy = models::checkpoint_policy_from_name(e.get_string("CHECKPOINT_POLICY"));
  if (has_field("NUM_SUB_BATCHES")) s.sub_batches = static_cast<int>(e.get_int("NUM_SUB_BATCHES"));
  s.checkpoint_policy_given = e.overridden("CHECKPOINT_POLICY") || models::rematerializes(s.checkpoint_policy);
  s.sub_batches_given = e.overridden("NUM_SUB_BATCHES") || s.sub_batches != 1;
  s.num_microbatches = e.get_int("NUM_MICROBATCHES");
  s.microbatch_size = e.get_int("MICROBATCH_SIZE");
  s.schedule = models::pipeline_schedule_from_name(e.get_string("PIPELINE_SCHEDULE"));
  if (has_field("CIRCULAR_REPEAT")) s.repeat = static_cast<int>(e.get_int("CIRCULAR_REPEAT"));
  s.validate();
  return s;
}

}  // namespace paxocl::plan
