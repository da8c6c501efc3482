#include "scheduler/train_job.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <algorithm>
#include <iostream>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include <csignal>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpointer.h"
#include "device/device_selection.h"
#include "device/known_peaks.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "inputs/dataset.h"
#include "device/mesh.h"
#include "models/adam_optimizer.h"
#include "models/gpt_model.h"
#include "models/initial_parameters.h"
#include "scheduler/step_program.h"
#include "models/lr_schedule.h"
#include "scheduler/step_trace.h"
#include "scheduler/summary_writer.h"

namespace paxocl::scheduler {

namespace {

using Clock = std::chrono::steady_clock;

std::string hms(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60) : fmt::format("{}:{:02}", s / 60, s % 60);
}

// Everything one job needs, built from the experiment.
struct Setup {
  const models::Experiment& exp;
  models::GptConfig config;
  models::LrSchedule lr;
  models::AdamConfig adam;
  inputs::InputParams input;  // this process's training input (batch: every local device's rows)
  long eval_batches;
  std::string data;
  collectives::FsdpMesh mesh;  // the data and fsdp axes, ICI and DCN
  int local_devices;  // devices of this process (ICI data x fsdp)
  int replicas;       // devices in the job, each on its own rows of the batch
  device::DType fprop_dtype = device::DType::kF32;
  models::DynamicLossScaler::Config loss_scale;
  int device_batch() const { return input.batch_size / local_devices; }
};

Setup resolve(const models::Experiment& e, const collectives::ProcessWorld& world) {
  Setup s{e, e.model_config(), {}, {}, {}, e.get_int("EVAL_LOOP_NUM_BATCHES"), e.get_string("DATA"), {}, 1, 1, device::DType::kF32, {}};
  s.config.validate();
  const std::vector<long> ici = e.get_int_list("ICI_MESH_SHAPE"), dcn = e.get_int_list("DCN_MESH_SHAPE");
  if (ici.size() != 3 || dcn.size() != 3) throw ConfigError("ICI_MESH_SHAPE and DCN_MESH_SHAPE need 3 dimensions [data, fsdp, tensor]");
  for (std::size_t a = 0; a < 3; ++a) {
    if (ici[a] < 1 || dcn[a] < 1) throw ConfigError("every mesh dimension must be at least 1");
  }
  if (ici[2] * dcn[2] != 1) {
    throw ConfigError(fmt::format(
        "ICI_MESH_SHAPE=[{},{},{}] x DCN_MESH_SHAPE=[{},{},{}] uses the tensor axis; pax-ocl implements data and fsdp "
        "parallelism so far: put the devices on the data or fsdp axis, e.g. ICI_MESH_SHAPE=[1,{},1]",
        ici[0], ici[1], ici[2], dcn[0], dcn[1], dcn[2], ici[0] * ici[1] * ici[2]));
  }
  s.mesh = collectives::FsdpMesh{static_cast<int>(ici[0]), static_cast<int>(ici[1]), static_cast<int>(dcn[0]),
                                 static_cast<int>(dcn[1])};
  s.local_devices = s.mesh.ici_data * s.mesh.ici_fsdp;
  if (dcn[0] * dcn[1] != world.size()) {
    throw ConfigError(fmt::format("DCN_MESH_SHAPE=[{},{},1] holds {} process(es), but the job has {}; set "
                                  "--fdl.DCN_MESH_SHAPE so that its product is {}, or launch {} process(es)",
                                  dcn[0], dcn[1], dcn[0] * dcn[1], world.size(), world.size(), dcn[0] * dcn[1]));
  }
  s.replicas = s.local_devices * world.size();
  s.fprop_dtype = device::dtype_from_name(e.get_string("FPROP_DTYPE"));
  s.loss_scale = models::DynamicLossScaler::Config{s.fprop_dtype == device::DType::kF16, e.get_float("LOSS_SCALE_INITIAL"),
                                                   e.get_int("LOSS_SCALE_GROWTH_INTERVAL")};
  models::DynamicLossScaler{s.loss_scale};  // its ConfigError now, before any device is opened
  if (e.get_string("ICI_ALGORITHM") != "ring" && e.get_string("ICI_ALGORITHM") != "host") {
    throw ConfigError(fmt::format("ICI_ALGORITHM={}: use ring or host", e.get_string("ICI_ALGORITHM")));
  }
  if (e.get_string("LR_SCHEDULE") != "linear_rampup_cosine_decay") {
    throw ConfigError(fmt::format("LR_SCHEDULE={}: pax-ocl implements linear_rampup_cosine_decay", e.get_string("LR_SCHEDULE")));
  }
  s.lr = models::LrSchedule{e.get_float("LEARNING_RATE"), e.get_int("LR_COS_WARMUP"), e.get_int("LR_COS_DECAY_START"),
                            e.get_int("LR_COS_DECAY_END"), e.get_float("LR_COS_MIN_RATIO")};
  s.lr.validate();
  s.adam = models::AdamConfig{e.get_float("ADAM_BETA1"), e.get_float("ADAM_BETA2"), e.get_float("ADAM_EPSILON"),
                              e.get_float("WEIGHT_DECAY"), e.get_float("CLIP_GRADIENT_NORM_TO_VALUE")};
  for (const char* f : {"MAX_STEPS", "SUMMARY_INTERVAL_STEPS", "EVAL_INTERVAL_STEPS", "GRADIENT_BUCKET_BYTES", "FSDP_PREFETCH_DEPTH",
                        "CHECKPOINT_EVERY_N_STEPS", "CHECKPOINT_MAX_TO_KEEP", "PREEMPTION_GRACE_SECONDS"}) {
    if (e.get_int(f) < (std::string(f) == "SUMMARY_INTERVAL_STEPS" ? 1 : 0)) {
      throw ConfigError(fmt::format("{}={}: must be {}", f, e.get_int(f), std::string(f) == "SUMMARY_INTERVAL_STEPS" ? ">= 1" : ">= 0"));
    }
  }
  s.input.seq_len = s.config.max_seq_len;
  s.input.batch_size = inputs::per_host_batch_size(e.get_float("PERCORE_BATCH_SIZE"), s.replicas, world.size());
  if (s.input.batch_size % s.local_devices != 0) {
    throw ConfigError(fmt::format("PERCORE_BATCH_SIZE={} is not a whole number of sequences per device; data "
                                  "and fsdp parallelism need whole sequences on every device",
                                  e.get_float("PERCORE_BATCH_SIZE")));
  }
  s.input.num_infeed_hosts = world.size();
  s.input.infeed_host_index = world.rank();
  s.input.seed = static_cast<std::uint64_t>(e.get_int("SEED"));
  s.input.prefetch_depth = static_cast<int>(e.get_int("PREFETCH_DEPTH"));
  s.input.tokenizer_model = e.get_string("TOKENIZER");
  s.input.eval_loop_num_batches = s.eval_batches;
  s.input.validate();
  return s;
}

// The job directory, the resolved experiment and a log file that receives every log line.
void open_job_dir(const models::Experiment& e, const std::filesystem::path& dir, int rank) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw ConfigError(fmt::format("--job_log_dir={}: cannot create it ({})", dir.string(), ec.message()));
  // Read back on resume and by `export`: it must appear whole (a DataError when it cannot be written).
  if (rank == 0) write_file_atomically(dir / "experiment.json", e.to_json().dump(2) + "\n");
  const std::string log = rank == 0 ? "train.log" : fmt::format("train-rank{}.log", rank);
  auto file_sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>((dir / log).string());
  spdlog::default_logger()->sinks().push_back(file_sink);
  spdlog::default_logger()->flush_on(spdlog::level::info);  // a killed job keeps its log
}

// The devices' step program, with its parameters loaded from --init_from or the initialisation.
struct Runtime {
  Runtime(const Setup& s, const JobOptions& o, const collectives::ProcessWorld& world) {
    const auto selected = device::select_devices(device::enumerate_devices(), device::parse_device_selection(o.devices_spec));
    // The mesh check: ICI_MESH_SHAPE's devices must be available in this process.
    device::Mesh(device::MeshShape{s.mesh.ici_data, s.mesh.ici_fsdp, 1}, device::MeshShape{s.mesh.dcn_data, s.mesh.dcn_fsdp, 1},
                 world.size(), std::min<int>(static_cast<int>(selected.size()), s.local_devices));
    StepOptions options{s.config, s.adam, s.device_batch(), o.gemm_policy, s.mesh,
                        s.exp.get_bool("OVERLAP_COMMUNICATION"),
                        static_cast<std::size_t>(s.exp.get_int("GRADIENT_BUCKET_BYTES")),
                        static_cast<int>(s.exp.get_int("FSDP_PREFETCH_DEPTH")), s.exp.get_string("ICI_ALGORITHM") == "ring",
                        s.fprop_dtype, s.loss_scale};
    program = make_step_program(selected, cache, world, options);
    if (o.init_weights) {
      program->load_parameters(program->model().flat_from_weights(*o.init_weights));
      spdlog::info("initialised from the --init_from weights");
    } else {  // the same seed everywhere: identical replicas
      program->load_parameters(
          models::initial_parameters(program->layout(), static_cast<std::uint64_t>(s.exp.get_int("SEED")), s.config.init_std));
    }
  }
  device::ProgramCache cache;
  std::unique_ptr<StepProgram> program;
};

// SIGTERM / SIGUSR1 (a preemption or Slurm's early warning): finish the step, save, exit. Within
// PREEMPTION_GRACE_SECONDS, or the process ends anyway (SIGALRM): a peer that died leaves the step's
// collectives hanging, and mpirun's SIGTERM must still end the job. A second signal ends it at once.
volatile std::sig_atomic_t g_preempt_signal = 0;
unsigned g_grace_seconds = 60;
extern "C" void on_preempt_signal(int signal) {
  if (g_preempt_signal != 0) ::_exit(128 + signal);
  g_preempt_signal = signal;
  ::alarm(g_grace_seconds);
}

// Whether any process of the job got the signal (collective, so all stop at the same step).
bool preemption_requested(const collectives::ProcessWorld& world) {
  std::vector<double> flag = {g_preempt_signal != 0 ? 1.0 : 0.0};
  if (world.size() > 1) world.all_reduce_sum(flag);
  return flag[0] > 0;
}

checkpoint::CheckpointPolicy checkpoint_policy(const models::Experiment& e) {
  return {e.get_int("CHECKPOINT_EVERY_N_STEPS"), e.get_int("CHECKPOINT_MAX_TO_KEEP"),
          e.get_float("CHECKPOINT_KEEP_INTERVAL_HOURS"), e.get_bool("ENABLE_CHECKPOINT_SAVING"),
          e.get_bool("ASYNC_CHECKPOINTING")};
}

// What a checkpoint of the current step holds from this process (device-to-host copies).
checkpoint::Snapshot take_snapshot(StepProgram& program, const Setup& s, const inputs::BaseInput& input) {
  checkpoint::Snapshot snap;
  snap.slices = program.state_slices();
  const StepProgram::OptimizerCounts counts = program.optimizer_counts();
  snap.optimizer_steps_applied = counts.applied;
  snap.optimizer_steps_skipped = counts.skipped;
  if (program.loss_scaler().enabled()) snap.loss_scale = program.loss_scaler().state();
  snap.input_state = input.state().to_string();
  snap.seed = static_cast<std::uint64_t>(s.exp.get_int("SEED"));
  snap.experiment_json = s.exp.to_json().dump();
  snap.sharding = fmt::format("data {} x fsdp {} (ICI [{},{},1] x DCN [{},{},1])", s.mesh.ici_data * s.mesh.dcn_data,
                              s.mesh.ici_fsdp * s.mesh.dcn_fsdp, s.mesh.ici_data, s.mesh.ici_fsdp, s.mesh.dcn_data,
                              s.mesh.dcn_fsdp);
  snap.mesh.add_axis_names("data");
  snap.mesh.add_axis_names("fsdp");
  snap.mesh.add_axis_names("tensor");
  for (int d : {s.mesh.ici_data, s.mesh.ici_fsdp, 1}) snap.mesh.add_ici_shape(d);
  for (int d : {s.mesh.dcn_data, s.mesh.dcn_fsdp, 1}) snap.mesh.add_dcn_shape(d);
  return snap;
}

// Sums a process's loss statistics over the job (collective).
models::LossStats job_total(const collectives::ProcessWorld& world, models::LossStats local) {
  std::vector<double> v = {local.weighted_loss, local.weight, local.correct};
  world.all_reduce_sum(v);
  return models::LossStats{v[0], v[1], v[2]};
}

// GFLOP/s of a 1024^3 GEMM on the model's GEMM: the peak MFU is measured against.
double measure_gemm_peak(device::Device& dev, kernels::Gemm& gemm) {
  const std::size_t n = 1024;
  device::Buffer<float> a(dev.context(), n * n, "peak.a"), b(dev.context(), n * n, "peak.b"), c(dev.context(), n * n, "peak.c");
  const kernels::GemmShape s{kernels::Transpose::kNo, kernels::Transpose::kYes, n, n, n};
  double best = 1e30;
  for (int i = 0; i < 4; ++i) {
    const auto t0 = Clock::now();
    gemm.run(s, 1.0f, {a.get(), 0, n}, {b.get(), 0, n}, 0.0f, {c.get(), 0, n});
    dev.queue().finish();
    if (i > 0) best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return 2.0 * static_cast<double>(n * n * n) / best / 1e9;
}

// One evaluation pass over this process's shard, totalled over the job; rank 0 writes summaries.
// When the program's forward is collective (FSDP over processes) every process runs as many
// passes as the one with the most batches: the others run zero-weight batches.
models::LossStats evaluate(const collectives::ProcessWorld& world, StepProgram& program, inputs::BaseInput& input,
                           SummaryWriter* out, long step, const char* name) {
  input.reset();
  models::LossStats local;
  long batches = 0;
  std::optional<inputs::Batch> last;
  for (;;) {
    std::optional<inputs::Batch> batch = input.get_next();
    if (program.evaluation_is_collective()) {
      std::vector<double> any = {batch ? 1.0 : 0.0};
      world.all_reduce_sum(any);
      if (any[0] == 0) break;
      if (!batch && last) {
        batch = last;
        std::fill(batch->weights.begin(), batch->weights.end(), 0.0f);
      } else if (!batch) {
        throw DataError(fmt::format("{}: this process has no evaluation data while others do", name));
      }
    } else if (!batch) {
      break;
    }
    local += program.evaluate(*batch);
    ++batches;
    last = std::move(batch);
  }
  const models::LossStats total = job_total(world, local);
  if (out != nullptr) {
    out->scalar("loss", total.mean_loss(), step);
    out->scalar("log_pplx", total.mean_loss(), step);
    out->scalar("fraction_of_correct_next_step_preds", total.accuracy(), step);
  }
  spdlog::info("{} at step {}: loss {:.4f}  log_pplx {:.4f}  accuracy {:.4f}  ({} batches, {:.0f} tokens)", name, step,
               total.mean_loss(), total.mean_loss(), total.accuracy(), batches, total.weight);
  return total;
}

struct EvalInputs {
  std::unique_ptr<inputs::BaseInput> train, test;
};

EvalInputs make_eval_inputs(const Setup& s) {
  inputs::InputParams p = s.input;
  p.batch_size = s.device_batch();  // evaluated on one device per process
  p.is_training = false;
  p.prefetch_depth = 0;
  EvalInputs e;
  e.train = inputs::make_input(s.data, "train", p, s.config.vocab_size);
  try {
    e.test = inputs::make_input(s.data, "validation", p, s.config.vocab_size);
  } catch (const DataError& err) {
    spdlog::warn("no validation data ({}); eval_test is skipped", err.what());
  }
  return e;
}

}  // namespace

std::filesystem::path default_job_log_dir(const std::string& experiment) {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  return std::filesystem::path("runs") / fmt::format("{}-{}", experiment, stamp);
}

int run_training(const models::Experiment& experiment, const JobOptions& options, const collectives::ProcessWorld& world) {
  const auto started = Clock::now();
  const Setup s = resolve(experiment, world);
  open_job_dir(experiment, options.job_log_dir, world.rank());
  Runtime rt(s, options, world);
  StepProgram& program = *rt.program;
  models::GptModel& model = program.model();
  auto train_input = inputs::make_input(s.data, "train", s.input, s.config.vocab_size);
  EvalInputs eval = make_eval_inputs(s);

  // Resume: the newest good checkpoint in job_log_dir/checkpoints, whatever mesh saved it.
  checkpoint::Checkpointer checkpoints(options.job_log_dir / "checkpoints", world, checkpoint_policy(experiment),
                                       model.layout());
  long first_step = 0;
  if (std::optional<checkpoint::RestoredState> restored = checkpoints.restore()) {
    program.load_state(restored->params, restored->m, restored->v,
                       {restored->optimizer_steps_applied, restored->optimizer_steps_skipped});
    if (restored->loss_scale) program.loss_scaler().restore(*restored->loss_scale);
    train_input->restore(inputs::InputState::parse(restored->input_state));
    first_step = restored->step;
    spdlog::info("resumed from {} (step {}, saved as {})", restored->directory, restored->step, restored->sharding);
  }
  auto save = [&](long step) {
    checkpoints.save(step, [&] { return take_snapshot(program, s, *train_input); });
    spdlog::info("checkpoint of step {}: training paused {:.0f} ms ({})", step, checkpoints.last_blocking_ms(),
                 checkpoints.last_blocking_ms() > 0 && experiment.get_bool("ASYNC_CHECKPOINTING") ? "copy to host; written in the background" : "written");
  };
  if (checkpoints.due(first_step)) save(first_step);  // step 0 of a new job
  g_preempt_signal = 0;
  g_grace_seconds = static_cast<unsigned>(experiment.get_int("PREEMPTION_GRACE_SECONDS"));
  std::signal(SIGTERM, on_preempt_signal);
  std::signal(SIGUSR1, on_preempt_signal);

  const bool chief = world.rank() == 0;  // rank 0 writes summaries and the console
  const std::vector<long> trace_steps = experiment.get_int_list("TRACE_STEPS");
  std::vector<std::int64_t> clock_offsets;  // per device: host ns - device ns
  if (!trace_steps.empty()) {
    for (device::Device* d : program.devices()) clock_offsets.push_back(device_clock_offset_ns(d->queue()));
  }
  nlohmann::json trace = nlohmann::json::array();
  const std::filesystem::path summaries = options.job_log_dir / "summaries";
  std::unique_ptr<SummaryWriter> train_out, eval_train_out, eval_test_out;
  if (chief) {
    train_out = std::make_unique<SummaryWriter>(summaries / "train");
    eval_train_out = std::make_unique<SummaryWriter>(summaries / "eval_train");
    eval_test_out = std::make_unique<SummaryWriter>(summaries / "eval_test");
  }
  const double peak_gflops = measure_gemm_peak(program.device(), model.gemm()) * s.replicas;
  // The datasheet's FP32 peak of a known accelerator, for a second MFU (pax-ocl computes in FP32).
  const std::optional<device::KnownPeak> datasheet = device::known_peak(program.device().info().name);
  const double datasheet_gflops = datasheet ? datasheet->fp32_tflops * 1e3 * s.replicas : 0.0;
  const long max_steps = experiment.get_int("MAX_STEPS"), summary_every = experiment.get_int("SUMMARY_INTERVAL_STEPS"),
             eval_every = experiment.get_int("EVAL_INTERVAL_STEPS");
  const double tokens_per_step = static_cast<double>(s.input.batch_size) * s.config.max_seq_len * world.size();
  const double flops_per_step = s.config.flops_per_token(s.config.max_seq_len) * tokens_per_step;
  if (chief) {
    train_out->scalar("num_params", static_cast<double>(model.layout().parameter_count()), 0);
    train_out->scalar("global_batch_size", static_cast<double>(s.input.batch_size) * world.size(), 0);
    train_out->scalar("mfu_peak_gflops_measured", peak_gflops, 0);
    std::cout << fmt::format(
                     "experiment {}: {:.2f}M parameters, {} x {} tokens per step, {} steps, {} over {} "
                     "device(s) ({} per process) on {}\n"
                     "training state: {:.1f} MiB per device (parameters, gradients, Adam moments{})\n"
                     "activations: {:.1f} MiB per device ({}, {} x {} tokens)\n"
                     "MFU is measured against the devices' GEMM peak, measured now: {:.1f} GFLOP/s in all{}\n"
                     "job directory: {}\n",
                     experiment.name(), static_cast<double>(model.layout().parameter_count()) / 1e6,
                     s.input.batch_size * world.size(), s.config.max_seq_len, max_steps,
                     s.mesh.ici_fsdp * s.mesh.dcn_fsdp > 1
                         ? fmt::format("FSDP (fsdp {} x data {})", s.mesh.ici_fsdp * s.mesh.dcn_fsdp,
                                       s.mesh.ici_data * s.mesh.dcn_data)
                         : std::string("data parallel"),
                     s.replicas, s.local_devices, program.device().info().name,
                     static_cast<double>(program.state_bytes_per_device()) / (1 << 20),
                     s.fprop_dtype == device::DType::kF32 ? "" : fmt::format(", {} weight copy", device::dtype_name(s.fprop_dtype)),
                     static_cast<double>(model.activation_bytes()) / (1 << 20), device::dtype_name(s.fprop_dtype),
                     s.device_batch(), s.config.max_seq_len, peak_gflops,
                     datasheet ? fmt::format(" ({} datasheet: {:.1f} TFLOP/s FP32 per device, {:.1f} BF16)", datasheet->model,
                                             datasheet->fp32_tflops, datasheet->bf16_tflops)
                               : std::string(), options.job_log_dir.string())
              << std::flush;
  }

  // A live line only on a real terminal of a single process (launchers forward output through a pty).
  const bool live = chief && world.size() == 1 && ::isatty(STDOUT_FILENO) != 0;
  models::LossStats interval;
  double grad_norm_sum = 0, clipped_norm_sum = 0;
  long interval_steps = 0;
  auto interval_start = Clock::now();
  const auto train_start = Clock::now();
  for (long step = first_step; step < max_steps; ++step) {
    const inputs::Batch batch = *train_input->get_next();
    const double lr = s.lr.at(step);
    models::OptimizerStepStats opt;
    const bool traced = std::find(trace_steps.begin(), trace_steps.end(), step + 1) != trace_steps.end();
    if (traced) program.set_tracing(true);
    const models::LossStats stats = program.train_step(batch, lr, opt);
    if (traced) {
      const std::vector<TraceEvent> events = program.take_trace(clock_offsets, step + 1);
      const CommOverlap o = measure_overlap(events);
      if (program.communicates()) {
        spdlog::info("step {} trace: {} events; communication {:.2f} ms, exposed {:.2f} ms ({:.0f}% hidden behind compute)",
                     step + 1, events.size(), o.comm_ms, o.exposed_ms, 100 * o.hidden_fraction());
      } else {
        spdlog::info("step {} trace: {} events; no communication (one replica)", step + 1, events.size());
      }
      for (auto& e : chrome_events(events, world.rank())) trace.push_back(e);
    }
    interval += stats;
    grad_norm_sum += opt.grad_norm;
    clipped_norm_sum += opt.grad_norm * opt.grad_scale;
    ++interval_steps;
    const long done = step + 1;
    if (step == 0) {
      spdlog::info("first step done {:.0f} ms after start (programs: {} from the cache, {} compiled)",
                   std::chrono::duration<double, std::milli>(Clock::now() - started).count(), rt.cache.stats().hits,
                   rt.cache.stats().misses);
    }
    if (done % summary_every == 0 || done == max_steps) {
      const models::LossStats total = job_total(world, interval);
      const double secs = std::chrono::duration<double>(Clock::now() - interval_start).count();
      const double steps_per_sec = interval_steps / secs, tokens_per_sec = steps_per_sec * tokens_per_step;
      const double tflops = steps_per_sec * flops_per_step / 1e12, mfu = tflops * 1e3 / peak_gflops;
      const double elapsed = std::chrono::duration<double>(Clock::now() - train_start).count();
      const double eta = elapsed / done * static_cast<double>(max_steps - done);
      if (chief) {
        train_out->scalar("loss", total.mean_loss(), done);
        train_out->scalar("log_pplx", total.mean_loss(), done);
        train_out->scalar("fraction_of_correct_next_step_preds", total.accuracy(), done);
        train_out->scalar("learning_rate", lr, done);
        train_out->scalar("grad_norm", grad_norm_sum / interval_steps, done);
        train_out->scalar("grad_norm_clipped", clipped_norm_sum / interval_steps, done);
        train_out->scalar("steps_per_sec", steps_per_sec, done);
        train_out->scalar("tokens_per_sec", tokens_per_sec, done);
        train_out->scalar("tflops_per_sec", tflops, done);
        train_out->scalar("mfu", mfu, done);
        if (program.loss_scaler().enabled()) {
          train_out->scalar("loss_scale", program.loss_scaler().scale(), done);
          train_out->scalar("loss_scale_overflows", static_cast<double>(program.loss_scaler().overflows()), done);
        }
        train_out->scalar("steps_skipped", static_cast<double>(program.steps_skipped()), done);
        if (datasheet_gflops > 0) train_out->scalar("mfu_datasheet_fp32", tflops * 1e3 / datasheet_gflops, done);
        const std::string line = fmt::format(
            "step {:>6}/{}  loss {:.4f}  log_pplx {:.4f}  lr {:.2e}  {:.0f} tok/s  MFU {:.1f}%  elapsed {}  ETA {}", done,
            max_steps, total.mean_loss(), total.mean_loss(), lr, tokens_per_sec, 100 * mfu, hms(elapsed), hms(eta));
        std::cout << (live ? "\r\033[K" : "") << line << "\n" << std::flush;
        spdlog::default_logger()->sinks().back()->log(
            spdlog::details::log_msg(spdlog::source_loc{}, "pax-ocl", spdlog::level::info, line));
      }
      interval = {};
      grad_norm_sum = clipped_norm_sum = 0;
      interval_steps = 0;
      interval_start = Clock::now();
    } else if (live) {
      std::cout << fmt::format("\r\033[Kstep {:>6}/{}  loss {:.4f}", done, max_steps, stats.mean_loss()) << std::flush;
    }
    if ((eval_every > 0 && done % eval_every == 0) || done == max_steps) {
      evaluate(world, program, *eval.train, eval_train_out.get(), done, "eval_train");
      if (eval.test) evaluate(world, program, *eval.test, eval_test_out.get(), done, "eval_test");
      interval_start = Clock::now();  // evaluation time is not training throughput
    }
    if (preemption_requested(world)) {
      if (checkpoints.enabled() && checkpoints.last_saved_step() < done) save(done);
      checkpoints.wait();
      world.barrier();  // rank 0 has committed: no process leaves (a launcher may then kill the rest) before
      ::alarm(0);
      spdlog::warn("stopped at step {} on signal {}: {}; exit code {} asks for a requeue", done,
                   static_cast<int>(g_preempt_signal),
                   checkpoints.last_saved_step() == done
                       ? fmt::format("checkpoint of step {} saved", done)
                       : fmt::format("checkpoint saving is off, a requeue resumes from step {}",
                                     std::max(0L, checkpoints.last_saved_step())),
                   static_cast<int>(kExitPreempted));
      return kExitPreempted;
    }
    if (checkpoints.due(done)) save(done);
  }
  if (checkpoints.enabled() && checkpoints.last_saved_step() < max_steps && first_step < max_steps) save(max_steps);
  checkpoints.wait();
  world.barrier();  // the final checkpoint is committed before any process exits
  if (!trace_steps.empty()) {
    const std::vector<std::string> parts = world.all_gather(trace.dump());  // every rank's events
    if (chief) {
      nlohmann::json all = nlohmann::json::array();
      for (const std::string& p : parts) {
        for (auto& e : nlohmann::json::parse(p)) all.push_back(e);
      }
      std::ofstream(options.job_log_dir / "trace.json") << nlohmann::json{{"traceEvents", all}}.dump() << "\n";
      spdlog::info("trace of steps {} written to {} (open it in ui.perfetto.dev)", fmt::join(trace_steps, ","),
                   (options.job_log_dir / "trace.json").string());
    }
  }
  if (program.loss_scaler().enabled()) {
    spdlog::info("float16 loss scale: {} at the end; {} overflow(s) skipped in this run", program.loss_scaler().scale(),
                 program.loss_scaler().overflows());
  }
  if (program.steps_skipped() > 0) spdlog::warn("{} step(s) skipped for non-finite gradients", program.steps_skipped());
  if (options.save_weights) {
    const models::HostWeights weights{s.config, model.layout().alignment(), program.parameters()};  // collective
    if (chief) {
      models::save_weights_file(*options.save_weights, weights);
      spdlog::info("weights written to {}", options.save_weights->string());
    }
  }
  if (chief) {
    std::cout << fmt::format("done in {}. Summaries: {}\nView them with: tensorboard --logdir {}\n",
                             hms(std::chrono::duration<double>(Clock::now() - started).count()), summaries.string(),
                             summaries.string());
  }
  return kExitOk;
}

int run_evaluation(const models::Experiment& experiment, const JobOptions& options,
                   const collectives::ProcessWorld& world) {
  const Setup s = resolve(experiment, world);
  open_job_dir(experiment, options.job_log_dir, world.rank());
  Runtime rt(s, options, world);
  const checkpoint::CheckpointDir checkpoints(options.job_log_dir / "checkpoints");
  const auto restored = checkpoint::read_latest_checkpoint(checkpoints, rt.program->layout(), [](const std::string& why) {
    spdlog::warn("skipping a checkpoint that does not read back whole: {}", why);
  });
  const long step = restored ? restored->step : 0;
  if (restored) {
    rt.program->load_state(restored->params, restored->m, restored->v,
                           {restored->optimizer_steps_applied, restored->optimizer_steps_skipped});
    spdlog::info("evaluating {} (step {})", restored->directory, restored->step);
  } else {
    spdlog::info("no checkpoints yet: evaluating the model's initialisation");
  }
  EvalInputs eval = make_eval_inputs(s);
  const std::filesystem::path summaries = options.job_log_dir / "summaries";
  std::unique_ptr<SummaryWriter> eval_train_out, eval_test_out;
  if (world.rank() == 0) {
    eval_train_out = std::make_unique<SummaryWriter>(summaries / "eval_train");
    eval_test_out = std::make_unique<SummaryWriter>(summaries / "eval_test");
  }
  const models::LossStats train = evaluate(world, *rt.program, *eval.train, eval_train_out.get(), step, "eval_train");
  if (world.rank() == 0) std::cout << fmt::format("eval_train: loss {:.4f}  accuracy {:.4f}\n", train.mean_loss(), train.accuracy());
  if (eval.test) {
    const models::LossStats test = evaluate(world, *rt.program, *eval.test, eval_test_out.get(), step, "eval_test");
    if (world.rank() == 0) std::cout << fmt::format("eval_test: loss {:.4f}  accuracy {:.4f}\n", test.mean_loss(), test.accuracy());
  }
  return kExitOk;
}

}  // namespace paxocl::scheduler
