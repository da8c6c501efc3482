#include "plan/plan_report.h"

#include <fmt/format.h>

namespace paxocl::plan {

using device::MeshAxis;

namespace {

double gb(std::size_t bytes) { return gib(static_cast<double>(bytes)); }

// "2.06e+15" style figures read badly; FLOP counts with an SI prefix.
std::string si(double value, const char* unit) {
  const char* prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  while (value >= 1000 && i < 6) {
    value /= 1000;
    ++i;
  }
  return *unit == '\0' ? fmt::format("{:.3g}{}", value, prefixes[i]) : fmt::format("{:.3g} {}{}", value, prefixes[i], unit);
}

std::string seconds(double s) { return s >= 1000 ? fmt::format("{:.0f} s", s) : fmt::format("{:.3g} s", s); }

const char* kind_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kAllReduce: return "all-reduce";
    case CollectiveKind::kAllGather: return "all-gather";
    case CollectiveKind::kReduceScatter: return "reduce-scatter";
    case CollectiveKind::kSend: return "send";
  }
  return "";
}

std::string links_line(const StepTime& t) {
  auto one = [](double gbps) { return gbps > 0 ? fmt::format("{:g} GB/s", gbps) : std::string("unknown"); };
  return fmt::format("ICI {}, DCN {} each way", one(t.ici_gbps), one(t.dcn_gbps));
}

}  // namespace

std::string format_plan(const Plan& p, const std::string& experiment) {
  const LayoutSpec& s = p.spec;
  const DeviceMemory& m = p.memory;
  const bool fsdp = s.along(MeshAxis::kFsdp) > 1;
  const int tensor = s.along(MeshAxis::kTensor), stages = s.stages();
  const bool circular = stages > 1 && s.schedule == models::PipelineSchedule::kCircular;
  const std::string dtype(device::dtype_name(s.fprop));
  const models::ParameterLayout full(s.model, 1);
  std::string out;
  auto line = [&out](const std::string& text) { out += text + "\n"; };

  const double parameters = static_cast<double>(full.parameter_count());
  line(fmt::format("plan for {}: {}, {}", experiment, s.model.describe(),
                   parameters >= 1e9 ? fmt::format("{:.1f}B parameters", parameters / 1e9)
                                     : fmt::format("{:.2f}M parameters", parameters / 1e6)));
  line(fmt::format("layout: {}", s.describe()));
  line(fmt::format("batch: {} sequences x {} tokens per step ({} tokens); each {} runs {} sequence(s); "
                   "FPROP_DTYPE {}",
                   s.global_batch, s.model.max_seq_len(), si(p.tokens_per_step, ""),
                   stages > 1 ? "pipeline" : "tensor group", s.group_sequences(),
                   s.fprop_auto ? "auto, planned as float32 (a job picks bfloat16 on CPUs with bfloat16 matrix "
                                  "instructions: name FPROP_DTYPE to plan that)"
                                : dtype));
  // A pass: one sub-batch, or one microbatch of a pipeline (never both).
  line(fmt::format("memory: CHECKPOINT_POLICY={}, NUM_SUB_BATCHES={} ({} sequence(s) per pass)",
                   models::checkpoint_policy_name(s.checkpoint_policy), s.sub_batches,
                   s.group_sequences() / s.sub_batches / s.microbatches()));
  if (p.choice) line("  chosen by the plan, " + *p.choice);
  if (stages > 1) {
    // Under the circular schedule a stage's blocks come as r chunks, each holding its microbatches.
    line(fmt::format("pipeline: {} stages of {}{} block(s), PIPELINE_SCHEDULE {}, {} microbatches of {} sequence(s){}; "
                     "at most {} in flight {}; bubble {} = {:.1f}% of the step",
                     stages, circular ? fmt::format("{} chunks of ", s.repeat) : std::string(),
                     s.model.num_blocks() / s.virtual_stages(),
                     circular ? fmt::format("circular x {}", s.repeat) : models::pipeline_schedule_name(s.schedule),
                     s.microbatches(), s.microbatch_sequences(),
                     s.microbatches_given() ? "" : " (NUM_MICROBATCHES not given: one each)", m.microbatches_in_flight,
                     circular ? "per chunk" : "on a device", circular ? "(p-1)/(r*m+p-1)" : "(p-1)/(m+p-1)",
                     100 * p.bubble_fraction));
    if (fsdp) {
      line(fmt::format("  FSDP inside the stages: {} pipelines (data {} x fsdp {}) share the rows; each chunk's Adam "
                       "moments sharded over fsdp {}, its parameters and gradients whole",
                       s.along(MeshAxis::kData) * s.along(MeshAxis::kFsdp), s.along(MeshAxis::kData),
                       s.along(MeshAxis::kFsdp), s.along(MeshAxis::kFsdp)));
    }
  }
  line(fmt::format("accelerator: {}: {:.4g} TFLOP/s {} ({}), {:.1f} GiB, {} ({})", p.accelerator.name,
                   p.time.peak_gflops / 1e3, dtype,
                   p.accelerator.host_cpu ? p.accelerator.peak_basis
                                          : p.accelerator.peak_basis + (s.fprop == device::DType::kF32 ? " FP32" : " BF16"),
                   gib(p.accelerator.memory_bytes),
                   links_line(p.time), p.accelerator.links));

  line("");
  line(fmt::format("{:<62} {:>10}",
                   circular     ? fmt::format("memory per device (the stage holding the most, its {} chunks)", s.repeat)
                   : stages > 1 ? std::string("memory per device (the stage holding the most)")
                                : std::string("memory per device"),
                   "GiB"));
  // FSDP shards everything without a stage axis, only Adam's moments inside the stages.
  const std::string stage_owned = circular ? "the stage's chunks" : "the stage's";
  const std::string owned = fsdp && stages == 1 ? ", FSDP shard" : stages > 1 ? ", " + stage_owned : "";
  const std::string adam_owned = fsdp && stages > 1 ? ", FSDP shard of " + stage_owned : owned;
  line(fmt::format("  {:<60} {:>10.2f}", "parameters (float32" + owned + ")", gb(m.parameters)));
  line(fmt::format("  {:<60} {:>10.2f}", "gradients (float32" + owned + ")", gb(m.gradients)));
  line(fmt::format("  {:<60} {:>10.2f}", "Adam moments (2 x float32" + adam_owned + ")", gb(m.adam_moments)));
  if (fsdp && stages == 1) {
    line(fmt::format("  {:<60} {:>10.2f}", "FSDP gather buffers (resident units, parameters + gradients)",
                     gb(m.fsdp_resident)));
  }
  if (m.weight_copy > 0) line(fmt::format("  {:<60} {:>10.2f}", dtype + " weight copy", gb(m.weight_copy)));
  line(fmt::format("  {:<60} {:>10.2f}", "Adam gradient-norm partial sums", gb(m.optimizer_workspace)));
  const std::string activations =
      tensor > 1 && s.sequence_parallel ? " (sequence parallel)"
      : stages > 1 ? fmt::format(" ({} microbatch{} in flight{})", m.microbatches_in_flight,
                                 m.microbatches_in_flight == 1 ? "" : "es",
                                 circular ? fmt::format(" x {} chunks", s.repeat) : std::string())
                   : std::string();
  line(fmt::format("  {:<60} {:>10.2f}", "activations" + activations, gb(m.activations)));
  if (tensor > 1) {
    line(fmt::format("    {:<58} {:>10.2f}", "without SEQUENCE_PARALLEL", gb(m.activations_without_sp)));
    line(fmt::format("    {:<58} {:>10.2f}", "with SEQUENCE_PARALLEL", gb(m.activations_with_sp)));
  }
  if (m.ssm_fft_workspace > 0) {
    line(fmt::format("  {:<60} {:>10.2f}", "SSM FFT workspace (shared by the SSM blocks)", gb(m.ssm_fft_workspace)));
  }
  line(fmt::format("  {:<60} {:>10.2f}", "total", gb(m.total())));
  line(fmt::format("  largest buffer: '{}' {:.2f} GiB{}", m.largest.name, gb(m.largest.bytes),
                   p.accelerator.max_alloc_bytes > 0
                       ? fmt::format(" (largest allocation {:.2f} GiB)", gb(p.accelerator.max_alloc_bytes))
                       : std::string()));

  line("");
  line(fmt::format("compute: {} per device per step ({} per token x {} tokens / {} device{}){}",
                   si(p.flops_per_device, "FLOP"), si(p.flops_per_token, "FLOP"), si(p.tokens_per_step, ""),
                   s.devices(), s.devices() == 1 ? "" : "s",
                   p.recompute_flops_per_device > 0
                       ? fmt::format(", and {} recomputed ({})", si(p.recompute_flops_per_device, "FLOP"),
                                     models::checkpoint_policy_name(s.checkpoint_policy))
                       : std::string()));

  line("");
  if (p.collectives.empty()) {
    line("communication: none (one device)");
  } else {
    line(fmt::format("{:<62} {:>6} {:>8} {:>10} {:>10}", "communication per device per step", "ops", "exposed",
                     "ICI GiB", "DCN GiB"));
    double ici = 0, dcn = 0;
    for (const Collective& c : p.collectives) {
      const double n = static_cast<double>(c.operations);
      ici += c.ici_bytes * n;
      dcn += c.dcn_bytes * n;
      line(fmt::format("  {:<60} {:>6} {:>8} {:>10.3f} {:>10.3f}", c.name, c.operations, c.exposed,
                       gib(c.ici_bytes * n), gib(c.dcn_bytes * n)));
    }
    line(fmt::format("  {:<60} {:>6} {:>8} {:>10.3f} {:>10.3f}", "total", "", "", gib(ici), gib(dcn)));
    if (stages > 1) {
      const LinkBytes sends = point_to_point_bytes(p.collectives);
      line(fmt::format("  point to point (PP sends): {:.3f} GiB ICI, {:.3f} GiB DCN", gib(sends.ici), gib(sends.dcn)));
    }
  }

  line("");
  const StepTime& t = p.time;
  line(fmt::format("step time: compute {} ({:.4g} TFLOP/s x MFU {:.2f}){}; communication {} overlapping it, {} exposed "
                   "({})",
                   seconds(t.compute_s), t.peak_gflops / 1e3, t.mfu,
                   stages > 1 ? fmt::format(", pipeline bubble {}", seconds(t.bubble_s)) : std::string(),
                   seconds(t.hidden_s), seconds(t.exposed_s), links_line(t)));
  std::string unknown;
  for (const std::string& u : t.unknown) unknown += (unknown.empty() ? "" : ", ") + u;
  line(fmt::format("  => {} per step{}, {} tokens/s", seconds(t.step_s),
                   unknown.empty() ? std::string()
                                   : fmt::format(" or more ({} unknown: --accelerator, --ici_bandwidth, --dcn_bandwidth)",
                                                 unknown),
                   t.step_s > 0 ? si(p.tokens_per_step / t.step_s, "") : std::string("?")));
  line(fmt::format("  (step = max(compute{}, overlapping communication) + exposed communication; the optimizer "
                   "update, kernel launches and input are not counted)",
                   stages > 1 ? " + bubble" : ""));

  line("");
  line("verdict: " + p.verdict);
  if (!p.fits) {
    if (p.smallest) {
      line(fmt::format("smallest layout that fits: {}, {:.1f} GiB per device: {}", p.smallest->describe(),
                       gb(p.smallest_memory->total()), p.smallest->flags()));
    } else {
      line("no stage x data x fsdp x tensor layout of this global batch fits: lower PERCORE_BATCH_SIZE or MAX_SEQ_LEN");
    }
  }
  return out;
}

nlohmann::json plan_json(const Plan& p, const std::string& experiment) {
  const LayoutSpec& s = p.spec;
  const DeviceMemory& m = p.memory;
  auto layout = [](const LayoutSpec& l) {
    return nlohmann::json{{"ici_mesh_shape", l.ici},
                          {"dcn_mesh_shape", l.dcn},
                          {"devices", l.devices()},
                          {"processes", l.processes()},
                          {"global_batch", l.global_batch},
                          {"sequence_parallel", l.sequence_parallel},
                          {"checkpoint_policy", models::checkpoint_policy_name(l.checkpoint_policy)},
                          {"num_sub_batches", l.sub_batches},
                          {"stages", l.stages()},
                          {"num_microbatches", l.microbatches()},
                          {"pipeline_schedule", models::pipeline_schedule_name(l.schedule)},
                          {"circular_repeat", l.repeat},
                          {"flags", l.flags()}};
  };
  nlohmann::json j;
  j["experiment"] = experiment;
  j["model"] = s.model.describe();
  j["layout"] = layout(s);
  j["fprop_dtype"] = device::dtype_name(s.fprop);
  j["accelerator"] = {{"name", p.accelerator.name},
                      {"peak_gflops", p.time.peak_gflops},
                      {"peak_basis", p.accelerator.peak_basis},
                      {"memory_bytes", p.accelerator.memory_bytes},
                      {"max_alloc_bytes", p.accelerator.max_alloc_bytes},
                      {"ici_gbps", p.time.ici_gbps},
                      {"dcn_gbps", p.time.dcn_gbps},
                      {"links", p.accelerator.links}};
  j["memory_bytes"] = {{"parameters", m.parameters},
                       {"gradients", m.gradients},
                       {"adam_moments", m.adam_moments},
                       {"fsdp_resident", m.fsdp_resident},
                       {"weight_copy", m.weight_copy},
                       {"optimizer_workspace", m.optimizer_workspace},
                       {"state", m.state()},
                       {"activations", m.activations},
                       {"activations_without_sequence_parallel", m.activations_without_sp},
                       {"activations_with_sequence_parallel", m.activations_with_sp},
                       {"ssm_fft_workspace", m.ssm_fft_workspace},
                       {"total", m.total()},
                       {"largest_buffer", {{"name", m.largest.name}, {"bytes", m.largest.bytes}}}};
  j["flops"] = {{"per_token", p.flops_per_token},
                {"tokens_per_step", p.tokens_per_step},
                {"per_device", p.flops_per_device},
                {"recompute_per_device", p.recompute_flops_per_device}};
  if (p.choice) j["memory_choice"] = *p.choice;
  if (s.stages() > 1) {
    const LinkBytes sends = point_to_point_bytes(p.collectives);
    j["pipeline"] = {{"stages", s.stages()},
                     {"blocks_per_stage", s.model.num_blocks() / s.stages()},
                     {"schedule", models::pipeline_schedule_name(s.schedule)},
                     {"circular_repeat", s.repeat},
                     {"blocks_per_chunk", s.model.num_blocks() / s.virtual_stages()},
                     {"microbatches", s.microbatches()},
                     {"microbatch_sequences", s.microbatch_sequences()},
                     {"microbatches_in_flight", m.microbatches_in_flight},
                     {"optimizer_shards", s.along(MeshAxis::kFsdp)},
                     {"bubble_fraction", p.bubble_fraction},
                     {"point_to_point_ici_bytes", sends.ici},
                     {"point_to_point_dcn_bytes", sends.dcn}};
  }
  nlohmann::json comms = nlohmann::json::array();
  for (const Collective& c : p.collectives) {
    comms.push_back({{"name", c.name},
                     {"kind", kind_name(c.kind)},
                     {"axis", device::kMeshAxisNames[static_cast<std::size_t>(c.axis)]},
                     {"bytes", c.bytes},
                     {"operations", c.operations},
                     {"exposed", c.exposed},
                     {"ici_bytes_per_operation", c.ici_bytes},
                     {"dcn_bytes_per_operation", c.dcn_bytes}});
  }
  j["communication"] = comms;
  j["step_time"] = {{"mfu", p.time.mfu},
                    {"compute_s", p.time.compute_s},
                    {"bubble_s", p.time.bubble_s},
                    {"hidden_communication_s", p.time.hidden_s},
                    {"exposed_communication_s", p.time.exposed_s},
                    {"step_s", p.time.step_s},
                    {"unknown_bandwidths", p.time.unknown}};
  j["fits"] = p.fits;
  j["verdict"] = p.verdict;
  if (p.smallest) {
    j["smallest_layout"] = layout(*p.smallest);
    j["smallest_layout"]["total_bytes"] = p.smallest_memory->total();
  }
  return j;
}

}  // namespace paxocl::plan
