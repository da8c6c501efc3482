#include "scheduler/train_job.h"

#include <chrono>
#include <ctime>
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpointer.h"
#include "device/device_selection.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "device/mesh_proto.h"
#include "inputs/dataset.h"
#include "inputs/tokenizer.h"
#include "kernels_cl/cpu_flash_attention.h"
#include "kernels_cl/ssm_kernels.h"
#include "models/initial_parameters.h"
#include "plan/plan.h"
#include "sampling/generate.h"
#include "scheduler/evaluation.h"
#include "scheduler/preemption.h"
#include "scheduler/startup_phases.h"
#include "scheduler/step_program.h"
#include "scheduler/trace_recorder.h"
#include "scheduler/training_report.h"
#include "scheduler/zero_shot_eval.h"

namespace paxocl::scheduler {

namespace {

using Clock = std::chrono::steady_clock;

// The job directory, the resolved experiment and a log file that receives every log line. An
// evaluation keeps a job's experiment.json as training wrote it (its --fdl overrides, a mesh of its
// own, are not the job's), and writes one only into a directory that has none.
void open_job_dir(const config::JobConfig& job, int rank, bool training) {
  const std::filesystem::path& dir = job.flags.job_log_dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw ConfigError(fmt::format("--job_log_dir={}: cannot create it ({})", dir.string(), ec.message()));
  // A job directory whose newest checkpoint holds another model is refused before experiment.json
  // is replaced (the restore checks every checkpoint it reads; an unreadable manifest is its to report).
  if (training) {
    const checkpoint::CheckpointDir checkpoints(dir / "checkpoints");
    if (const std::vector<long> steps = checkpoints.steps(); !steps.empty()) {
      try {
        checkpoint::require_same_model(checkpoints, steps.back(), job.experiment);
      } catch (const DataError&) {  // unreadable: the restore reports it and falls back to an older one
      }
    }
  }
  // Read back on resume and by `export`: it must appear whole (a DataError when it cannot be written).
  if (rank == 0 && (training || !std::filesystem::exists(dir / "experiment.json"))) {
    write_file_atomically(dir / "experiment.json", job.experiment.to_json().dump(2) + "\n");
  }
  const std::string log = rank == 0 ? "train.log" : fmt::format("train-rank{}.log", rank);
  auto file_sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>((dir / log).string());
  spdlog::default_logger()->sinks().push_back(file_sink);
  spdlog::default_logger()->flush_on(spdlog::level::info);  // a killed job keeps its log
}

// `pax-ocl plan`'s figures for the job's layout against the process's devices, before any buffer
// exists: a ConfigError naming what it needs, what a device has and the smallest layout that fits
// (rather than an allocation failing half-way). CPU devices of a process share their host's memory
// (PoCL reports the whole pool for each), so each gets its share.
void require_layout_fits(const config::JobConfig& job, const std::vector<device::DeviceInfo>& selected, int local) {
  plan::LayoutSpec spec;
  spec.model = job.model;
  spec.ici = job.mesh.ici;
  spec.dcn = job.mesh.dcn;
  spec.global_batch = static_cast<long>(job.input.batch_size) * job.input.num_infeed_hosts;
  spec.fprop = job.step.fprop_dtype;
  spec.fsdp_prefetch_depth = job.step.fsdp_prefetch_depth;
  spec.overlap = job.step.overlap;
  spec.ici_ring = job.step.ici_ring;
  spec.sequence_parallel = job.step.sequence_parallel;
  spec.checkpoint_policy = job.step.checkpoint_policy;
  spec.sub_batches = job.step.sub_batches;
  // The job's microbatch count as resolved (from MICROBATCH_SIZE too); with no stage axis, none.
  if (job.step.pipeline.stages > 1) spec.num_microbatches = job.step.pipeline.microbatches;
  spec.schedule = job.step.pipeline.schedule;
  spec.repeat = job.step.pipeline.repeat;
  spec.base_address_align_bytes = selected.front().base_address_align_bytes;
  spec.flash_attention = [info = selected.front()](std::size_t hs) { return kernels::fused_attention(info, hs); };
  spec.ssm_fft = [info = selected.front()](const std::string& convolution, std::size_t T) {
    return kernels::ssm_fft_requested(convolution, info, T);
  };
  plan::MemoryLimits limits{static_cast<double>(selected.front().global_mem_bytes), selected.front().max_alloc_bytes};
  int cpus = 0;
  for (int d = 0; d < local; ++d) {
    const device::DeviceInfo& info = selected[static_cast<std::size_t>(d)];
    limits.memory_bytes = std::min(limits.memory_bytes, static_cast<double>(info.global_mem_bytes));
    limits.max_alloc_bytes = std::min<std::size_t>(limits.max_alloc_bytes, info.max_alloc_bytes);
    if (info.kind == device::DeviceKind::kCpu) ++cpus;
  }
  if (cpus > 1) limits.memory_bytes /= cpus;
  if (limits.memory_bytes <= 0) return;  // a driver that reports no memory: nothing to check against
  plan::require_fits(spec, limits, selected.front().name);
}

// The devices' step program, with its parameters loaded from --init_from or the initialisation.
struct Runtime {
  Runtime(const config::JobConfig& job, const collectives::ProcessWorld& world, StartupPhases& phases) {
    const auto selected = device::select_devices(device::enumerate_devices(), device::parse_device_selection(job.flags.devices_spec));
    phases.done(fmt::format("{} OpenCL device(s) opened", selected.size()));
    // The job's one mesh; its ConfigError when ICI_MESH_SHAPE's devices are not all available here.
    const device::Mesh mesh(job.mesh.ici, job.mesh.dcn, world.size(),
                            std::min<int>(static_cast<int>(selected.size()), job.mesh.local_devices()));
    require_layout_fits(job, selected, mesh.devices_per_process());
    phases.release();  // from here on, no one-line configuration error can follow
    if (!job.fprop_dtype_choice.empty() && world.rank() == 0) spdlog::info("{}", job.fprop_dtype_choice);
    program = make_step_program(selected, cache, world, StepOptions::of(job, mesh));
    const device::ProgramCacheStats programs = cache.stats();
    phases.done(fmt::format("step program built ({} programs from the cache, {} compiled)", programs.hits, programs.misses));
    if (job.init_weights) {
      program->load_parameters(program->model().flat_from_weights(*job.init_weights));
      spdlog::info("initialised from the --init_from weights");
    } else {  // the same seed everywhere: identical replicas
      program->load_parameters(models::initial_parameters(program->layout(), job.seed, job.model.init_std()));
    }
    phases.done(job.init_weights ? "parameters loaded" : "parameters initialised");
  }
  device::ProgramCache cache;
  std::unique_ptr<StepProgram> program;
};

// What a checkpoint of the current step holds from this process (device-to-host copies).
checkpoint::Snapshot take_snapshot(StepProgram& program, const config::JobConfig& job, const inputs::BaseInput& input) {
  checkpoint::Snapshot snap;
  snap.slices = program.state_slices();
  const StepProgram::OptimizerCounts counts = program.optimizer_counts();
  snap.optimizer_steps_applied = counts.applied;
  snap.optimizer_steps_skipped = counts.skipped;
  if (program.loss_scaler().enabled()) snap.loss_scale = program.loss_scaler().state();
  snap.input_state = input.state().to_string();
  snap.seed = job.seed;
  snap.experiment_json = job.experiment.to_json().dump();
  snap.sharding = job.sharding();
  snap.mesh = device::to_proto(program.mesh());
  return snap;
}

// Loads the newest good checkpoint, if any, into the program and the input; returns its step.
long resume(checkpoint::Checkpointer& checkpoints, StepProgram& program, inputs::BaseInput& input) {
  std::optional<checkpoint::RestoredState> restored = checkpoints.restore();
  if (!restored) return 0;
  program.load_state(restored->params, restored->m, restored->v,
                     {restored->optimizer_steps_applied, restored->optimizer_steps_skipped});
  if (restored->loss_scale) {
    try {
      program.loss_scaler().restore(*restored->loss_scale);
    } catch (const ConfigError& e) {  // an edited or foreign manifest: say which checkpoint
      throw ConfigError(fmt::format("{}: {}; move that checkpoint away to resume from an earlier one",
                                    restored->directory, e.what()));
    }
  }
  input.restore(inputs::InputState::parse(restored->input_state));
  spdlog::info("resumed from {} (step {}, saved as {})", restored->directory, restored->step, restored->sharding);
  return restored->step;
}

// Rank 0's summary writers of the evaluations (null elsewhere).
struct EvalWriters {
  EvalWriters(const config::JobConfig& job, int rank) {
    if (rank != 0) return;
    train = std::make_unique<SummaryWriter>(job.flags.job_log_dir / "summaries" / "eval_train");
    test = std::make_unique<SummaryWriter>(job.flags.job_log_dir / "summaries" / "eval_test");
  }
  // A resumed job's restart (SummaryWriter::session_start): evaluations after the restored step repeat.
  void resumed_at(long step) {
    if (train) train->session_start(step + 1);
    if (test) test->session_start(step + 1);
  }
  std::unique_ptr<SummaryWriter> train, test;
};

void evaluate_both(const collectives::ProcessWorld& world, StepProgram& program, EvalInputs& eval, EvalWriters& out,
                   long step) {
  evaluate(world, program, *eval.train, out.train.get(), step, "eval_train");
  if (eval.test) evaluate(world, program, *eval.test, out.test.get(), step, "eval_test");
}

// After the last step: the weights file, the skipped-step and loss-scale notes.
void finish_training(const config::JobConfig& job, const collectives::ProcessWorld& world, StepProgram& program) {
  if (program.loss_scaler().enabled()) {
    spdlog::info("float16 loss scale: {} at the end; {} overflow(s) skipped in this run", program.loss_scaler().scale(),
                 program.loss_scaler().overflows());
  }
  if (program.steps_skipped() > 0) spdlog::warn("{} step(s) skipped for non-finite gradients", program.steps_skipped());
  if (!job.flags.save_weights) return;
  const models::HostWeights weights{job.model, program.layout().alignment(), program.parameters()};  // collective
  if (world.rank() == 0) {
    models::save_weights_file(*job.flags.save_weights, weights);
    spdlog::info("weights written to {}", job.flags.save_weights->string());
  }
}

// The job ends with a few lines of what the model writes, when its data has a tokenizer: rank 0's
// first replica (FSDP, tensor and pipeline parallelism hold parts, not a model that can decode: they print none).
void print_sample(const config::JobConfig& job, const collectives::ProcessWorld& world, StepProgram& program) {
  models::Model& model = program.model();
  if (world.rank() != 0 || model.resident_block_slots() != 0 || job.mesh.along(device::MeshAxis::kTensor) > 1 ||
      job.mesh.along(device::MeshAxis::kStage) > 1) {
    return;
  }
  if (model.max_seq_len() < 2) return;  // the prompt's one token fills the context: nothing to write
  const auto tokenizer_model = inputs::tokenizer_of(job.data, job.model.vocab_size(), job.input.tokenizer_model);
  if (!tokenizer_model) return;
  const inputs::Tokenizer tokenizer(*tokenizer_model);
  sampling::GenerateOptions options;
  options.sampling = {.temperature = 0.8f, .top_k = 40, .top_p = 1.0f};
  options.max_decode_steps = 48;
  options.seed = job.seed;
  options.eos_id = tokenizer.eos_id();
  std::vector<int> text = sampling::generate(model, {tokenizer.eos_id()}, options).samples.front();
  if (!text.empty() && text.back() == tokenizer.eos_id()) text.pop_back();
  std::cout << fmt::format("sample (temperature 0.8, top-k 40; more: pax-ocl sample --job_log_dir={}):\n  {}\n",
                           job.flags.job_log_dir.string(), tokenizer.decode(text));
}

}  // namespace

std::filesystem::path default_job_log_dir(const std::string& experiment) {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  return std::filesystem::path("runs") / fmt::format("{}-{}", experiment, stamp);
}

int run_training(const config::JobConfig& job, const collectives::ProcessWorld& world) {
  const auto started = Clock::now();
  StartupPhases phases;
  open_job_dir(job, world.rank(), true);
  phases.done("job directory opened");
  Runtime rt(job, world, phases);
  StepProgram& program = *rt.program;
  auto train_input = inputs::make_input(job.data, "train", job.input, job.model.vocab_size());
  EvalInputs eval = make_eval_inputs(job);
  EvalWriters eval_out(job, world.rank());
  phases.done("data opened");
  checkpoint::Checkpointer checkpoints(job.flags.job_log_dir / "checkpoints", world, job.checkpoint, program.layout(),
                                       &job.experiment);
  auto save = [&](long step) {
    checkpoints.save(step, [&] { return take_snapshot(program, job, *train_input); });
    spdlog::info("checkpoint of step {}: training paused {:.0f} ms ({}; {:.0f} ms of it waiting for the previous write, "
                 "{:.0f} ms copying the state to host after the queued kernels)",
                 step, checkpoints.last_blocking_ms(),
                 checkpoints.last_blocking_ms() > 0 && job.checkpoint.async ? "written in the background" : "written",
                 checkpoints.last_wait_ms(), checkpoints.last_snapshot_ms());
  };
  const long first_step = resume(checkpoints, program, *train_input);
  phases.done(first_step > 0 ? "resumed" : "checkpoints looked up");
  if (first_step > 0) eval_out.resumed_at(first_step);
  if (checkpoints.due(first_step)) {  // step 0 of a new job
    save(first_step);
    phases.done(fmt::format("checkpoint of step {} taken", first_step));
  }
  PreemptionWatch preemption(job.cadence.preemption_grace_seconds);
  TraceRecorder tracer(job.cadence.trace_steps, program);
  TrainingReport report(job, world, program, rt.cache.dir(), first_step);
  phases.done("GEMM peak for MFU read or measured");

  const long max_steps = job.cadence.max_steps;
  for (long step = first_step + 1; step <= max_steps; ++step) {  // 1-based: `step` steps done after it
    const inputs::Batch batch = *train_input->get_next();
    const double lr = job.schedule.at(step - 1);
    models::OptimizerStepStats opt;
    tracer.begin_step(step);
    const models::LossStats stats = program.train_step(batch, lr, opt);
    tracer.end_step(step, world.rank());
    if (step == first_step + 1) {
      phases.done("first step (GEMM choices timed or read, kernels' first launches)");
      const device::ProgramCacheStats programs = rt.cache.stats();
      spdlog::info("first step done {:.0f} ms after start (programs: {} from the cache, {} compiled{})",
                   phases.since_process_start_ms(), programs.hits,
                   programs.misses,
                   programs.driver_cached > 0
                       ? fmt::format(", {} through the driver's own kernel cache", programs.driver_cached)
                       : "");
    }
    report.step_done(step, stats, opt, lr);
    if ((job.cadence.eval_every > 0 && step % job.cadence.eval_every == 0) || step == max_steps) {
      evaluate_both(world, program, eval, eval_out, step);
      report.restart_interval();
    }
    if (preemption.requested(world)) {
      if (checkpoints.enabled() && checkpoints.last_saved_step() < step) save(step);
      checkpoints.wait();
      world.barrier();  // rank 0 has committed: no process leaves (a launcher may then kill the rest) before
      preemption.disarm();
      spdlog::warn("stopped at step {} on signal {}: {}; exit code {} asks for a requeue", step, preemption.signal(),
                   checkpoints.last_saved_step() == step
                       ? fmt::format("checkpoint of step {} saved", step)
                       : fmt::format("checkpoint saving is off, a requeue resumes from step {}",
                                     std::max(0L, checkpoints.last_saved_step())),
                   static_cast<int>(kExitPreempted));
      return kExitPreempted;
    }
    if (checkpoints.due(step)) save(step);
  }
  if (checkpoints.enabled() && checkpoints.last_saved_step() < max_steps && first_step < max_steps) save(max_steps);
  checkpoints.wait();
  world.barrier();  // the final checkpoint is committed before any process exits
  tracer.write(world, job.flags.job_log_dir / "trace.json");
  finish_training(job, world, program);
  report.finish(started);
  print_sample(job, world, program);
  return kExitOk;
}

namespace {

// The zero-shot task's examples, read before any device opens (a bad line is an error at once).
// A weights file (--init_from) carries no tokenizer, and the experiment's data is not what it was
// trained on (DATA=kjv would build a new KJV tokenizer of the file's vocabulary size and score the
// text with it): its text examples need a tokenizer the user names (--fdl.TOKENIZER, --fdl.DATA).
std::vector<inputs::ZeroShotExample> zero_shot_examples(const config::JobConfig& job) {
  std::optional<std::filesystem::path> tokenizer_model;
  if (!job.flags.init_from) {
    tokenizer_model = inputs::tokenizer_of(job.data, job.model.vocab_size(), job.input.tokenizer_model);
  } else if (job.experiment.overridden("TOKENIZER") && !job.input.tokenizer_model.empty()) {
    tokenizer_model = job.input.tokenizer_model;
  } else if (job.experiment.overridden("DATA")) {
    tokenizer_model = inputs::tokenizer_of(job.data, job.model.vocab_size(), job.input.tokenizer_model);
  }
  std::optional<inputs::Tokenizer> tokenizer;
  if (tokenizer_model) tokenizer.emplace(*tokenizer_model);
  return inputs::read_zero_shot_examples(
      job.flags.zero_shot_data, inputs::zero_shot_task_from_name(job.flags.zero_shot_task),
      {job.model.vocab_size(), job.model.max_seq_len(), tokenizer ? &*tokenizer : nullptr});
}

// Prints the metrics, writes them to TensorBoard (summaries/<task>) and, if asked, as JSON (rank 0).
// The JSON also lists every example: its line, each candidate's log-likelihood, tokens and greedy
// tokens (BoolQ: yes first, then no).
void report_zero_shot(const config::JobConfig& job, const std::vector<inputs::ZeroShotExample>& examples,
                      const ZeroShotResult& result, long step, const std::string& source) {
  const std::string& task = job.flags.zero_shot_task;
  const inputs::ZeroShotMetrics& m = result.metrics;
  nlohmann::json j = {{"task", task}, {"data", job.flags.zero_shot_data.string()}, {"model", source},
                      {"step", step}, {"examples", m.examples}};
  SummaryWriter out(job.flags.job_log_dir / "summaries" / task);
  if (task == "lambada") {
    std::cout << fmt::format("{}: {} examples: acc_strict {:.4f}  target token accuracy {:.4f}  log_pplx {:.4f} "
                             "({} target tokens)\n",
                             task, m.examples, m.acc_strict, m.token_accuracy, m.log_pplx, m.tokens);
    out.scalar("acc_strict", m.acc_strict, step);
    out.scalar("target_token_accuracy", m.token_accuracy, step);
    out.scalar("log_pplx", m.log_pplx, step);
    j["acc_strict"] = m.acc_strict;
    j["target_token_accuracy"] = m.token_accuracy;
    j["log_pplx"] = m.log_pplx;
    j["target_tokens"] = m.tokens;
  } else {
    std::cout << fmt::format("{}: {} examples: boolq_acc {:.4f}\n", task, m.examples, m.boolq_acc);
    out.scalar("boolq_acc", m.boolq_acc, step);
    j["boolq_acc"] = m.boolq_acc;
  }
  std::cout << std::flush;
  nlohmann::json per = nlohmann::json::array();
  for (std::size_t e = 0; e < examples.size(); ++e) {
    nlohmann::json candidates = nlohmann::json::array();
    for (const inputs::CandidateScore& s : result.scores[e]) {
      candidates.push_back({{"log_likelihood", s.log_likelihood}, {"tokens", s.tokens}, {"greedy", s.greedy}});
    }
    per.push_back({{"line", examples[e].line}, {"candidates", candidates}});
  }
  j["per_example"] = per;
  if (job.flags.output_json) write_file_atomically(*job.flags.output_json, j.dump(2) + "\n");
}

}  // namespace

int run_evaluation(const config::JobConfig& job, const collectives::ProcessWorld& world) {
  const std::vector<inputs::ZeroShotExample> examples =
      job.flags.zero_shot_task.empty() ? std::vector<inputs::ZeroShotExample>() : zero_shot_examples(job);
  open_job_dir(job, world.rank(), false);
  StartupPhases phases;
  Runtime rt(job, world, phases);
  const checkpoint::CheckpointDir checkpoints(job.flags.job_log_dir / "checkpoints");
  const auto restored = checkpoint::read_latest_checkpoint(checkpoints, rt.program->layout(), &job.experiment, [](const std::string& why) {
    spdlog::warn("skipping a checkpoint that does not read back whole: {}", why);
  });
  const long step = restored ? restored->step : 0;
  if (restored) {
    rt.program->load_state(restored->params, restored->m, restored->v,
                           {restored->optimizer_steps_applied, restored->optimizer_steps_skipped});
    spdlog::info("evaluating {} (step {})", restored->directory, restored->step);
  } else {
    spdlog::info("no checkpoints yet: evaluating the model's {}", job.flags.init_from ? "weights file" : "initialisation");
  }
  if (!examples.empty()) {
    const inputs::ZeroShotTask task = inputs::zero_shot_task_from_name(job.flags.zero_shot_task);
    const ZeroShotResult result = zero_shot_evaluation(world, *rt.program, job, task, examples);
    if (world.rank() == 0) {
      report_zero_shot(job, examples, result, step,
                       restored ? restored->directory
                                : (job.flags.init_from ? job.flags.init_from->string() : std::string("initialisation")));
    }
    return kExitOk;
  }
  EvalInputs eval = make_eval_inputs(job);
  EvalWriters out(job, world.rank());
  const models::LossStats train = evaluate(world, *rt.program, *eval.train, out.train.get(), step, "eval_train");
  if (world.rank() == 0) std::cout << fmt::format("eval_train: loss {:.4f}  accuracy {:.4f}\n", train.mean_loss(), train.accuracy());
  if (eval.test) {
    const models::LossStats test = evaluate(world, *rt.program, *eval.test, out.test.get(), step, "eval_test");
    if (world.rank() == 0) std::cout << fmt::format("eval_test: loss {:.4f}  accuracy {:.4f}\n", test.mean_loss(), test.accuracy());
  }
  return kExitOk;
}

}  // namespace paxocl::scheduler
