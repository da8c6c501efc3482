#include "config/job_config.h"

#include <fmt/format.h>

#include "common/errors.h"
#include "config/pipeline_rules.h"
#include "config/sequence_parallel_rules.h"
#include "models/tensor_split.h"

namespace paxocl::config {

namespace {

// ICI_MESH_SHAPE x DCN_MESH_SHAPE against the processes of the job.
MeshConfig resolve_mesh(const Experiment& e, int processes) {
  MeshConfig m;
  m.ici = device::mesh_shape_from(e.get_int_list("ICI_MESH_SHAPE"), "ICI_MESH_SHAPE");
  m.dcn = device::mesh_shape_from(e.get_int_list("DCN_MESH_SHAPE"), "DCN_MESH_SHAPE");
  if (device::product(m.dcn) != processes) {
    // Pax's experiments are meshes of many hosts: name what ICI_MESH_SHAPE asks of each process too,
    // so that running one on a single machine takes one error, not two.
    const int ici = device::product(m.ici);
    const std::string per_process =
        ici > 1 ? fmt::format(" (and ICI_MESH_SHAPE={}, {} devices a process, to the devices each has: [1,1,1] for one)",
                              device::to_string(m.ici), ici)
                : "";
    throw ConfigError(fmt::format("DCN_MESH_SHAPE={} holds {} process(es), but the job has {}; set "
                                  "--fdl.DCN_MESH_SHAPE so that its product is {}{}, or launch {} process(es)",
                                  device::to_string(m.dcn), device::product(m.dcn), processes, processes,
                                  per_process, device::product(m.dcn)));
  }
  return m;
}

// The architecture: the experiment's, or that of the --init_from weights (read here, once).
models::ModelConfig resolve_model(Experiment& e, const JobFlags& flags, std::shared_ptr<const models::HostWeights>& init) {
  if (flags.init_from) {
    // The file's settings rule: a NUM_HEADS the user gave must agree with it (a GPT-2 safetensors
    // that records none takes it), and so must every other model flag.
    const std::optional<int> heads =
        e.overridden("NUM_HEADS") ? std::optional<int>(static_cast<int>(e.get_int("NUM_HEADS"))) : std::nullopt;
    auto weights = std::make_shared<models::HostWeights>(models::load_weights_file(*flags.init_from, heads, 1));
    e.adopt_model(weights->config, flags.init_from->string());  // the resolved experiment records the file's architecture
    weights->config.set_init_std(static_cast<float>(e.get_float("INIT_STD")));
    init = std::move(weights);
  }
  return e.model_config();  // validated
}

StepConfig resolve_step(const Experiment& e, const JobFlags& flags) {
  StepConfig s;
  s.gemm_policy = flags.gemm_policy;
  s.overlap = e.get_bool("OVERLAP_COMMUNICATION");
  s.bucket_bytes = static_cast<std::size_t>(e.get_int("GRADIENT_BUCKET_BYTES"));
  s.fsdp_prefetch_depth = static_cast<int>(e.get_int("FSDP_PREFETCH_DEPTH"));
  const std::string algorithm = e.get_string("ICI_ALGORITHM");
  if (algorithm != "ring" && algorithm != "host") throw ConfigError(fmt::format("ICI_ALGORITHM={}: use ring or host", algorithm));
  s.ici_ring = algorithm == "ring";
  s.sequence_parallel = e.get_bool("SEQUENCE_PARALLEL");
  s.checkpoint_policy = models::checkpoint_policy_from_name(e.get_string("CHECKPOINT_POLICY"));
  s.sub_batches = static_cast<int>(e.get_int("NUM_SUB_BATCHES"));
  if (e.get_string("FPROP_DTYPE") == "auto") {  // resolve_auto_fprop_dtype's job, before this
    throw std::logic_error("FPROP_DTYPE=auto reached resolve_job unresolved");
  }
  s.fprop_dtype = device::dtype_from_name(e.get_string("FPROP_DTYPE"));
  s.matmul_precision = kernels::matmul_precision_from_name(e.get_string("MATMUL_PRECISION"));
  s.loss_scale = models::DynamicLossScaler::Config{s.fprop_dtype == device::DType::kF16, e.get_float("LOSS_SCALE_INITIAL"),
                                                   e.get_int("LOSS_SCALE_GROWTH_INTERVAL")};
  models::DynamicLossScaler{s.loss_scale};  // its ConfigError now, before any device is opened
  return s;
}

void check_counts(const Experiment& e) {
  for (const char* f : {"MAX_STEPS", "SUMMARY_INTERVAL_STEPS", "EVAL_INTERVAL_STEPS", "GRADIENT_BUCKET_BYTES",
                        "FSDP_PREFETCH_DEPTH", "CHECKPOINT_EVERY_N_STEPS", "CHECKPOINT_MAX_TO_KEEP",
                        "PREEMPTION_GRACE_SECONDS"}) {
    const long least = std::string(f) == "SUMMARY_INTERVAL_STEPS" ? 1 : 0;
    if (e.get_int(f) < least) throw ConfigError(fmt::format("{}={}: must be >= {}", f, e.get_int(f), least));
  }
}

// Sequence parallelism needs a tensor group to split, and its rows of every pass
// (config/sequence_parallel_rules.h: the planner refuses the same layouts). After the pipeline's
// microbatches are resolved: a pipeline's pass is one microbatch.
void check_sequence_parallel(const JobConfig& j) {
  if (!j.step.sequence_parallel) return;
  const int tensor = j.mesh.along(device::MeshAxis::kTensor);
  if (tensor == 1) {
    throw ConfigError(fmt::format("SEQUENCE_PARALLEL=True needs a tensor axis > 1 (ICI_MESH_SHAPE={} x "
                                  "DCN_MESH_SHAPE={} has tensor 1): it splits the tensor group's rows",
                                  device::to_string(j.mesh.ici), device::to_string(j.mesh.dcn)));
  }
  SequenceParallelRequest r;
  r.tensor = tensor;
  r.batch = j.step.replica_batch;
  r.seq_len = j.model.max_seq_len();
  r.sub_batches = j.step.sub_batches;
  r.stages = j.step.pipeline.stages;
  r.microbatches = j.step.pipeline.microbatches;
  check_sequence_parallel_rows(r);
}

// Pipeline parallelism: blocks split evenly over the stages, the replica's batch into microbatches
// (config/pipeline_rules.h: the planner applies the same rules).
PipelineConfig resolve_pipeline(const Experiment& e, const JobConfig& j) {
  PipelineConfig p;
  p.stages = j.mesh.along(device::MeshAxis::kStage);
  p.schedule = models::pipeline_schedule_from_name(e.get_string("PIPELINE_SCHEDULE"));
  PipelineRequest r;
  r.stages = p.stages;
  r.blocks = j.model.num_blocks();
  r.batch = j.step.replica_batch;
  r.percore_batch = e.get_float("PERCORE_BATCH_SIZE");
  r.sub_batches = j.step.sub_batches;
  r.num_microbatches = e.get_int("NUM_MICROBATCHES");
  r.microbatch_size = e.get_int("MICROBATCH_SIZE");
  r.circular = p.schedule == models::PipelineSchedule::kCircular;
  r.repeat = p.repeat = static_cast<int>(e.get_int("CIRCULAR_REPEAT"));
  p.microbatches = pipeline_microbatches(r);
  return p;
}

}  // namespace

std::string JobConfig::sharding() const {
  const int tensor = mesh.along(device::MeshAxis::kTensor), stages = mesh.along(device::MeshAxis::kStage);
  return fmt::format("{}data {} x fsdp {}{} (ICI {} x DCN {})", stages > 1 ? fmt::format("stage {} x ", stages) : "",
                     mesh.along(device::MeshAxis::kData), mesh.along(device::MeshAxis::kFsdp),
                     tensor > 1 ? fmt::format(" x tensor {}", tensor) : "", device::to_string(mesh.ici),
                     device::to_string(mesh.dcn));
}

JobConfig resolve_job(Experiment experiment, JobFlags flags, int processes, int rank) {
  JobConfig j;
  j.experiment = std::move(experiment);
  j.flags = std::move(flags);
  Experiment& e = j.experiment;
  j.processes = processes;
  j.model = resolve_model(e, j.flags, j.init_weights);
  j.mesh = resolve_mesh(e, processes);
  models::validate_tensor_split(j.model, j.mesh.along(device::MeshAxis::kTensor));
  j.step = resolve_step(e, j.flags);
  if (e.get_string("LR_SCHEDULE") != "linear_rampup_cosine_decay") {
    throw ConfigError(fmt::format("LR_SCHEDULE={}: pax-ocl implements linear_rampup_cosine_decay", e.get_string("LR_SCHEDULE")));
  }
  j.schedule = models::LrSchedule{e.get_float("LEARNING_RATE"), e.get_int("LR_COS_WARMUP"), e.get_int("LR_COS_DECAY_START"),
                                  e.get_int("LR_COS_DECAY_END"), e.get_float("LR_COS_MIN_RATIO")};
  j.schedule.validate();
  j.optimizer = models::AdamConfig{e.get_float("ADAM_BETA1"), e.get_float("ADAM_BETA2"), e.get_float("ADAM_EPSILON"),
                                   e.get_float("WEIGHT_DECAY"), e.get_float("CLIP_GRADIENT_NORM_TO_VALUE")};
  check_counts(e);
  j.cadence = Cadence{e.get_int("MAX_STEPS"), e.get_int("SUMMARY_INTERVAL_STEPS"), e.get_int("EVAL_INTERVAL_STEPS"),
                      e.get_int_list("TRACE_STEPS"), static_cast<unsigned>(e.get_int("PREEMPTION_GRACE_SECONDS"))};
  j.checkpoint = checkpoint::CheckpointPolicy{e.get_int("CHECKPOINT_EVERY_N_STEPS"), e.get_int("CHECKPOINT_MAX_TO_KEEP"),
                                              e.get_float("CHECKPOINT_KEEP_INTERVAL_HOURS"),
                                              e.get_bool("ENABLE_CHECKPOINT_SAVING"), e.get_bool("ASYNC_CHECKPOINTING")};
  j.data = e.get_string("DATA");
  j.eval_batches = e.get_int("EVAL_LOOP_NUM_BATCHES");
  j.seed = static_cast<std::uint64_t>(e.get_int("SEED"));

  inputs::InputParams& in = j.input;
  const int local = j.mesh.local_devices();
  in.seq_len = j.model.max_seq_len();
  // Processes along the stage and tensor axes hold parts of one model replica: they read the same
  // rows. Ranks unravel row-major over [stage, data, fsdp, tensor]: the infeed host is the rank's
  // (data, fsdp) coordinates.
  const int tensor_processes = j.mesh.dcn.at_axis(device::MeshAxis::kTensor);
  const int stage_processes = j.mesh.dcn.at_axis(device::MeshAxis::kStage);
  in.num_infeed_hosts = processes / (tensor_processes * stage_processes);
  in.infeed_host_index = rank / tensor_processes % in.num_infeed_hosts;
  in.batch_size = inputs::per_host_batch_size(e.get_float("PERCORE_BATCH_SIZE"), j.mesh.replicas(processes),
                                              in.num_infeed_hosts);
  // Model replicas here: every device, or under tensor and pipeline parallelism every tensor group
  // or pipeline (whose devices share its sequences, so PERCORE_BATCH_SIZE may be a fraction, as in Pax).
  const int replicas =
      local / (j.mesh.ici.at_axis(device::MeshAxis::kTensor) * j.mesh.ici.at_axis(device::MeshAxis::kStage));
  if (in.batch_size % replicas != 0) {
    throw ConfigError(fmt::format("PERCORE_BATCH_SIZE={} gives {} sequences per process, not a whole number for each "
                                  "of its {} model replica(s) (devices, or tensor groups); data and fsdp parallelism "
                                  "need whole sequences on every replica",
                                  e.get_float("PERCORE_BATCH_SIZE"), in.batch_size, replicas));
  }
  j.step.replica_batch = in.batch_size / replicas;
  if (j.step.replica_batch % j.step.sub_batches != 0) {
    throw ConfigError(fmt::format("NUM_SUB_BATCHES={} does not divide the {} sequences each model replica runs per step "
                                  "(PERCORE_BATCH_SIZE={}); choose a divisor of {}",
                                  j.step.sub_batches, j.step.replica_batch, e.get_float("PERCORE_BATCH_SIZE"),
                                  j.step.replica_batch));
  }
  in.seed = j.seed;
  in.prefetch_depth = static_cast<int>(e.get_int("PREFETCH_DEPTH"));
  in.tokenizer_model = e.get_string("TOKENIZER");
  in.eval_loop_num_batches = j.eval_batches;
  in.validate();
  j.step.pipeline = resolve_pipeline(e, j);
  check_sequence_parallel(j);
  return j;
}

}  // namespace paxocl::config
