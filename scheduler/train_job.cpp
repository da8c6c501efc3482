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

#include "device/device_selection.h"
#include "device/errors.h"
#include "inputs/dataset.h"
#include "collectives/gradient_averager.h"
#include "device/mesh.h"
#include "models/adam_optimizer.h"
#include "models/gpt_model.h"
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
  int local_devices;  // replicas in this process (ICI data axis)
  int replicas;       // replicas in the job (ICI x DCN data axis)
  int device_batch() const { return input.batch_size / local_devices; }
};

Setup resolve(const models::Experiment& e, const collectives::ProcessWorld& world) {
  Setup s{e, e.model_config(), {}, {}, {}, e.get_int("EVAL_LOOP_NUM_BATCHES"), e.get_string("DATA"), 1, 1};
  s.config.validate();
  const std::vector<long> ici = e.get_int_list("ICI_MESH_SHAPE"), dcn = e.get_int_list("DCN_MESH_SHAPE");
  if (ici.size() != 3 || dcn.size() != 3) throw ConfigError("ICI_MESH_SHAPE and DCN_MESH_SHAPE need 3 dimensions [data, fsdp, tensor]");
  for (std::size_t a = 0; a < 3; ++a) {
    if (ici[a] < 1 || dcn[a] < 1) throw ConfigError("every mesh dimension must be at least 1");
  }
  if (ici[1] * ici[2] * dcn[1] * dcn[2] != 1) {
    throw ConfigError(fmt::format(
        "ICI_MESH_SHAPE=[{},{},{}] x DCN_MESH_SHAPE=[{},{},{}] uses the fsdp or tensor axis; pax-ocl implements data "
        "parallelism so far: put every device on the data axis, e.g. ICI_MESH_SHAPE=[{},1,1] DCN_MESH_SHAPE=[{},1,1]",
        ici[0], ici[1], ici[2], dcn[0], dcn[1], dcn[2], ici[0] * ici[1] * ici[2], dcn[0] * dcn[1] * dcn[2]));
  }
  s.local_devices = static_cast<int>(ici[0]);
  if (dcn[0] != world.size()) {
    throw ConfigError(fmt::format("DCN_MESH_SHAPE=[{},1,1] holds {} process(es), but the job has {}; set "
                                  "--fdl.DCN_MESH_SHAPE=[{},1,1] or launch {} process(es)",
                                  dcn[0], dcn[0], world.size(), world.size(), dcn[0]));
  }
  s.replicas = s.local_devices * world.size();
  const std::string dtype = e.get_string("FPROP_DTYPE");
  if (dtype == "bfloat16") {
    spdlog::warn("FPROP_DTYPE=bfloat16: pax-ocl computes in float32 (bfloat16 kernels are not implemented)");
  } else if (dtype != "float32") {
    throw ConfigError(fmt::format("FPROP_DTYPE={}: use float32 (or bfloat16, computed in float32)", dtype));
  }
  if (e.get_string("LR_SCHEDULE") != "linear_rampup_cosine_decay") {
    throw ConfigError(fmt::format("LR_SCHEDULE={}: pax-ocl implements linear_rampup_cosine_decay", e.get_string("LR_SCHEDULE")));
  }
  s.lr = models::LrSchedule{e.get_float("LEARNING_RATE"), e.get_int("LR_COS_WARMUP"), e.get_int("LR_COS_DECAY_START"),
                            e.get_int("LR_COS_DECAY_END"), e.get_float("LR_COS_MIN_RATIO")};
  s.lr.validate();
  s.adam = models::AdamConfig{e.get_float("ADAM_BETA1"), e.get_float("ADAM_BETA2"), e.get_float("ADAM_EPSILON"),
                              e.get_float("WEIGHT_DECAY"), e.get_float("CLIP_GRADIENT_NORM_TO_VALUE")};
  for (const char* f : {"MAX_STEPS", "SUMMARY_INTERVAL_STEPS", "EVAL_INTERVAL_STEPS", "GRADIENT_BUCKET_BYTES"}) {
    if (e.get_int(f) < (std::string(f) == "SUMMARY_INTERVAL_STEPS" ? 1 : 0)) {
      throw ConfigError(fmt::format("{}={}: must be {}", f, e.get_int(f), std::string(f) == "SUMMARY_INTERVAL_STEPS" ? ">= 1" : ">= 0"));
    }
  }
  s.input.seq_len = s.config.max_seq_len;
  s.input.batch_size = inputs::per_host_batch_size(e.get_float("PERCORE_BATCH_SIZE"), s.replicas, world.size());
  if (s.input.batch_size % s.local_devices != 0) {
    throw ConfigError(fmt::format("PERCORE_BATCH_SIZE={} is not a whole number of sequences per device; data "
                                  "parallelism needs whole sequences on every device",
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
  if (rank == 0) std::ofstream(dir / "experiment.json") << e.to_json().dump(2) << "\n";
  const std::string log = rank == 0 ? "train.log" : fmt::format("train-rank{}.log", rank);
  auto file_sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>((dir / log).string());
  spdlog::default_logger()->sinks().push_back(file_sink);
  spdlog::default_logger()->flush_on(spdlog::level::info);  // a killed job keeps its log
}

// One data-parallel replica: a device with its own copy of the model and optimizer state.
struct Replica {
  std::unique_ptr<device::Device> device;
  std::unique_ptr<models::GptModel> model;
  std::unique_ptr<models::AdamOptimizer> adam;
};

struct Runtime {
  Runtime(const Setup& s, const JobOptions& o, const collectives::ProcessWorld& world) {
    const auto selected = device::select_devices(device::enumerate_devices(), device::parse_device_selection(o.devices_spec));
    // The mesh check: ICI_MESH_SHAPE's devices must be available in this process.
    device::Mesh(device::MeshShape{s.local_devices, 1, 1}, device::MeshShape{world.size(), 1, 1}, world.size(),
                 std::min<int>(static_cast<int>(selected.size()), s.local_devices));
    for (int r = 0; r < s.local_devices; ++r) {
      Replica rep;
      rep.device = std::make_unique<device::Device>(selected[static_cast<std::size_t>(r)]);
      rep.model = std::make_unique<models::GptModel>(
          *rep.device, cache, s.config,
          models::GptModelOptions{static_cast<std::size_t>(s.device_batch()), 0, 64u << 20, o.gemm_policy});
      if (o.init_weights) {
        rep.model->load_weights(*o.init_weights);
      } else {
        rep.model->init(static_cast<std::uint64_t>(s.exp.get_int("SEED")));  // the same seed: identical replicas
      }
      rep.adam = std::make_unique<models::AdamOptimizer>(*rep.device, rep.model->kernels(), rep.model->layout().total(),
                                                         rep.model->layout().decayed_end(), s.adam);
      replicas.push_back(std::move(rep));
    }
    if (o.init_weights) spdlog::info("initialised from the --init_from weights");
    if (s.replicas > 1) {
      std::vector<device::Device*> local;
      for (auto& r : replicas) local.push_back(r.device.get());
      std::vector<int> ranks(static_cast<std::size_t>(world.size()));
      std::iota(ranks.begin(), ranks.end(), 0);
      averager = std::make_unique<collectives::GradientAverager>(local, world, ranks);
    }
  }
  models::GptModel& model() { return *replicas.front().model; }
  device::Device& device() { return *replicas.front().device; }

  device::ProgramCache cache;
  std::vector<Replica> replicas;
  std::unique_ptr<collectives::GradientAverager> averager;
};

// One data-parallel training step: each replica takes its rows of the batch, the gradients are
// averaged over every replica of the job, and every replica applies the same update.
// With `overlap`, finished blocks' gradients are averaged as soon as the last replica's backward
// has produced them (a marker on its queue gates the staging), so the reduction of block l runs
// while blocks l-1 .. 0 still compute; without it, one reduction follows the whole backward.
// `bucket_bytes` combines consecutive finished blocks until their gradients reach that size, as
// XLA's all-reduce combiner does: fewer, larger collectives (less latency) against a later start.
// Every variant gives the same sums in the same order.
models::LossStats train_step(Runtime& rt, const inputs::Batch& batch, int device_batch, double lr, bool overlap,
                             std::size_t bucket_bytes, models::OptimizerStepStats& opt) {
  models::LossStats stats;
  const models::ParameterLayout& layout = rt.model().layout();
  std::vector<collectives::Pending> reductions;
  // Averages the given ranges of every replica's gradients once `ready` (one event per replica) fire.
  auto average = [&](const std::vector<models::ParameterLayout::Range>& ranges, const std::vector<device::Event>& ready) {
    for (const auto& range : ranges) {
      collectives::IciCommunicator::Buffers views;
      for (auto& r : rt.replicas) views.push_back(r.model->gradient_buffer().view(range.offset, range.count, "grad range"));
      reductions.push_back(rt.averager->average(views, range.count, ready));
    }
  };
  std::vector<device::Event> ready;  // markers of the replicas whose backward is complete
  for (std::size_t r = 0; r < rt.replicas.size(); ++r) {
    inputs::Batch part{device_batch, batch.seq_len, {}, {}, {}};
    const std::size_t rows = static_cast<std::size_t>(device_batch) * static_cast<std::size_t>(batch.seq_len);
    const auto begin = static_cast<std::ptrdiff_t>(r * rows), end = static_cast<std::ptrdiff_t>((r + 1) * rows);
    part.ids.assign(batch.ids.begin() + begin, batch.ids.begin() + end);
    part.targets.assign(batch.targets.begin() + begin, batch.targets.begin() + end);
    part.weights.assign(batch.weights.begin() + begin, batch.weights.begin() + end);
    const bool last = r + 1 == rt.replicas.size();
    std::function<void(int)> block_done;
    if (overlap && rt.averager && last) {
      block_done = [&, bucket_last = -1, bucket_floats = std::size_t{0}](int l) mutable {
        if (bucket_last < 0) bucket_last = l;  // blocks finish from L-1 down to 0
        for (const auto& range : layout.ranges_of_blocks(l, l)) bucket_floats += range.count;
        if (bucket_floats * sizeof(float) < bucket_bytes && l > 0) return;
        std::vector<device::Event> now = ready;
        now.push_back(rt.replicas[r].device->queue().marker());
        rt.replicas[r].device->queue().flush();
        average(layout.ranges_of_blocks(l, bucket_last), now);
        bucket_last = -1;
        bucket_floats = 0;
      };
    }
    stats += rt.replicas[r].model->train_step_gradients(part, block_done);
    ready.push_back(rt.replicas[r].device->queue().marker());
    rt.replicas[r].device->queue().flush();
  }
  if (rt.averager) {
    if (overlap) {
      average(layout.ranges_outside_blocks(), ready);  // wte, wpe, lnf: final only at the very end
    } else {
      average({models::ParameterLayout::Range{0, layout.total()}}, ready);
    }
    for (const collectives::Pending& p : reductions) p.wait();
  }
  for (auto& r : rt.replicas) opt = r.adam->step(r.model->parameter_buffer(), r.model->gradient_buffer(), lr);
  return stats;
}

void set_step_tracing(Runtime& rt, bool on) {
  for (auto& r : rt.replicas) r.device->queue().set_tracing(on);
  if (rt.averager) rt.averager->ici().set_tracing(on);
}

// The kernels of every replica and the collectives of one step, on the host's time base.
std::vector<TraceEvent> collect_step_trace(Runtime& rt, const std::vector<std::int64_t>& offsets, long step) {
  std::vector<TraceEvent> events;
  for (std::size_t r = 0; r < rt.replicas.size(); ++r) {
    auto& q = rt.replicas[r].device->queue();
    q.set_tracing(false);
    for (const auto& k : q.take_trace()) {
      events.push_back({k.kernel, fmt::format("device {} compute", r), static_cast<std::int64_t>(k.start_ns) + offsets[r],
                        static_cast<std::int64_t>(k.end_ns) + offsets[r]});
    }
  }
  if (rt.averager) {
    rt.averager->ici().set_tracing(false);
    for (const auto& c : rt.averager->ici().take_trace()) {
      events.push_back({fmt::format("gradient {} (step {})", c.name, step), "communication", c.start_ns, c.end_ns});
    }
  }
  return events;
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
models::LossStats evaluate(const collectives::ProcessWorld& world, models::GptModel& model, inputs::BaseInput& input,
                           SummaryWriter* out, long step, const char* name) {
  input.reset();
  models::LossStats local;
  long batches = 0;
  while (auto batch = input.get_next()) {
    local += model.evaluate(*batch);
    ++batches;
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
  models::GptModel& model = rt.model();
  auto train_input = inputs::make_input(s.data, "train", s.input, s.config.vocab_size);
  EvalInputs eval = make_eval_inputs(s);

  const bool chief = world.rank() == 0;  // rank 0 writes summaries and the console
  const bool overlap = experiment.get_bool("OVERLAP_COMMUNICATION");
  const auto bucket_bytes = static_cast<std::size_t>(experiment.get_int("GRADIENT_BUCKET_BYTES"));
  const std::vector<long> trace_steps = experiment.get_int_list("TRACE_STEPS");
  std::vector<std::int64_t> clock_offsets;  // per replica: host ns - device ns
  if (!trace_steps.empty()) {
    for (auto& r : rt.replicas) {
      r.device->queue().set_tracing(false);
      clock_offsets.push_back(device_clock_offset_ns(r.device->queue()));
    }
  }
  nlohmann::json trace = nlohmann::json::array();
  const std::filesystem::path summaries = options.job_log_dir / "summaries";
  std::unique_ptr<SummaryWriter> train_out, eval_train_out, eval_test_out;
  if (chief) {
    train_out = std::make_unique<SummaryWriter>(summaries / "train");
    eval_train_out = std::make_unique<SummaryWriter>(summaries / "eval_train");
    eval_test_out = std::make_unique<SummaryWriter>(summaries / "eval_test");
  }
  const double peak_gflops = measure_gemm_peak(rt.device(), model.gemm()) * s.replicas;
  const long max_steps = experiment.get_int("MAX_STEPS"), summary_every = experiment.get_int("SUMMARY_INTERVAL_STEPS"),
             eval_every = experiment.get_int("EVAL_INTERVAL_STEPS");
  const double tokens_per_step = static_cast<double>(s.input.batch_size) * s.config.max_seq_len * world.size();
  const double flops_per_step = s.config.flops_per_token(s.config.max_seq_len) * tokens_per_step;
  if (chief) {
    train_out->scalar("num_params", static_cast<double>(model.layout().parameter_count()), 0);
    train_out->scalar("global_batch_size", static_cast<double>(s.input.batch_size) * world.size(), 0);
    train_out->scalar("mfu_peak_gflops_measured", peak_gflops, 0);
    std::cout << fmt::format(
                     "experiment {}: {:.2f}M parameters, {} x {} tokens per step, {} steps, data parallel over {} "
                     "device(s) ({} per process) on {}\n"
                     "MFU is measured against the devices' GEMM peak, measured now: {:.1f} GFLOP/s in all\n"
                     "job directory: {}\n",
                     experiment.name(), static_cast<double>(model.layout().parameter_count()) / 1e6,
                     s.input.batch_size * world.size(), s.config.max_seq_len, max_steps, s.replicas, s.local_devices,
                     rt.device().info().name, peak_gflops, options.job_log_dir.string())
              << std::flush;
  }

  // A live line only on a real terminal of a single process (launchers forward output through a pty).
  const bool live = chief && world.size() == 1 && ::isatty(STDOUT_FILENO) != 0;
  models::LossStats interval;
  double grad_norm_sum = 0, clipped_norm_sum = 0;
  long interval_steps = 0;
  auto interval_start = Clock::now();
  const auto train_start = Clock::now();
  for (long step = 0; step < max_steps; ++step) {
    const inputs::Batch batch = *train_input->get_next();
    const double lr = s.lr.at(step);
    models::OptimizerStepStats opt;
    const bool traced = std::find(trace_steps.begin(), trace_steps.end(), step + 1) != trace_steps.end();
    if (traced) set_step_tracing(rt, true);
    const models::LossStats stats = train_step(rt, batch, s.device_batch(), lr, overlap, bucket_bytes, opt);
    if (traced) {
      const std::vector<TraceEvent> events = collect_step_trace(rt, clock_offsets, step + 1);
      const CommOverlap o = measure_overlap(events);
      if (rt.averager) {
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
      evaluate(world, model, *eval.train, eval_train_out.get(), done, "eval_train");
      if (eval.test) evaluate(world, model, *eval.test, eval_test_out.get(), done, "eval_test");
      interval_start = Clock::now();  // evaluation time is not training throughput
    }
  }
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
  if (rt.replicas.front().adam->steps_skipped() > 0) {
    spdlog::warn("{} step(s) skipped for non-finite gradients", rt.replicas.front().adam->steps_skipped());
  }
  if (options.save_weights && chief) {
    models::save_weights_file(*options.save_weights, model.save_weights());
    spdlog::info("weights written to {}", options.save_weights->string());
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
  spdlog::info("no checkpoints yet: evaluating the model's initialisation");
  EvalInputs eval = make_eval_inputs(s);
  const std::filesystem::path summaries = options.job_log_dir / "summaries";
  std::unique_ptr<SummaryWriter> eval_train_out, eval_test_out;
  if (world.rank() == 0) {
    eval_train_out = std::make_unique<SummaryWriter>(summaries / "eval_train");
    eval_test_out = std::make_unique<SummaryWriter>(summaries / "eval_test");
  }
  const models::LossStats train = evaluate(world, rt.model(), *eval.train, eval_train_out.get(), 0, "eval_train");
  if (world.rank() == 0) std::cout << fmt::format("eval_train: loss {:.4f}  accuracy {:.4f}\n", train.mean_loss(), train.accuracy());
  if (eval.test) {
    const models::LossStats test = evaluate(world, rt.model(), *eval.test, eval_test_out.get(), 0, "eval_test");
    if (world.rank() == 0) std::cout << fmt::format("eval_test: loss {:.4f}  accuracy {:.4f}\n", test.mean_loss(), test.accuracy());
  }
  return kExitOk;
}

}  // namespace paxocl::scheduler
