// Training-step benchmark: times full steps (forward, backward, Adam update) of a GPT or LLaMA on
// one device and prints tokens/s, achieved GFLOP/s (model FLOPs: 6 x matmul parameters + 12 L T C
// per token, GptConfig / LlamaConfig::flops_per_token) and the share of step time spent in GEMM
// (profiled device time of the GEMM kernels), the activation memory the model allocated and the
// process's peak resident memory (VmHWM: on a CPU device, device memory is the process's).
// Usage: bench_train_step [A|B|C|D|T256|T512|T1024|T2048|LC|LD|all] [steps] [gemm policy: auto|clblast|cpu-8x48|...]
//                         [FPROP_DTYPE: float32|bfloat16|float16] [CHECKPOINT_POLICY: SAVE_EVERYTHING|SAVE_NOTHING|...]
// (device: PAX_OCL_DEVICES, default auto; SPDLOG_LEVEL=debug logs each GEMM shape class's timed choice;
// BENCH_MIN_SECONDS=S: steps are timed until S seconds were, `steps` at least: on a virtual machine
// whose speed drifts, 3 steps of 50 ms measured a small config 40% apart from one run to the next)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <spdlog/cfg/env.h>
#include <spdlog/spdlog.h>

#include "device/device_selection.h"
#include "device/kernel_times.h"
#include "kernels_cl/auto_gemm.h"
#include "models/adam_optimizer.h"
#include "models/checkpoint_policy.h"
#include "common/rng.h"
#include "models/initial_parameters.h"
#include "models/model_factory.h"
#include "kernels_cl/blis_gemm.h"
#include "kernels_cl/openmp_wait_policy.h"

namespace {

using namespace paxocl;

struct BenchConfig {
  const char* name;
  int layers, dims, heads, seq_len, vocab, batch;
  int kv_heads = 0;  // 0: a GPT (HIDDEN = 4 MODEL_DIMS); else a LLaMA with these key/value heads
};

// The configurations A, B, C (DIMS_PER_HEAD = MODEL_DIMS / NUM_HEADS), GPT-2 124M's D, the
// long sequences, and LC, LD: C's and D's sizes as LLaMAs (RMSNorm, RoPE, SwiGLU with F = 8C/3,
// a third of the query heads' key/value heads, an untied head), as in bench/torch_reference.py.
constexpr BenchConfig kConfigs[] = {
    {"A", 2, 128, 4, 128, 4096, 8},
    {"B", 4, 256, 4, 256, 8192, 8},
    {"C", 6, 384, 6, 256, 16384, 8},
    {"D", 12, 768, 12, 256, 50304, 4},
    // Long sequences at 2048 tokens a step (issue 26): L4 D256 H4 V8192, B x T = 2048.
    {"T256", 4, 256, 4, 256, 8192, 8},
    {"T512", 4, 256, 4, 512, 8192, 4},
    {"T1024", 4, 256, 4, 1024, 8192, 2},
    {"T2048", 4, 256, 4, 2048, 8192, 1},
    {"LC", 6, 384, 6, 256, 16384, 8, 2},
    {"LD", 12, 768, 12, 256, 50304, 4, 4},
};

models::ModelConfig model_config_of(const BenchConfig& b) {
  const auto with_shape = [&b](auto config) {  // the fields both families name alike
    config.num_layers = b.layers;
    config.model_dims = b.dims;
    config.num_heads = b.heads;
    config.dims_per_head = b.dims / b.heads;
    config.max_seq_len = b.seq_len;
    config.vocab_size = b.vocab;
    return config;
  };
  if (b.kv_heads == 0) {
    models::GptConfig c = with_shape(models::GptConfig{});
    c.hidden_dims = 4 * b.dims;
    return c;
  }
  models::LlamaConfig c = with_shape(models::LlamaConfig{});
  c.hidden_dims = (8 * b.dims / 3 + 15) / 16 * 16;  // LLaMA's 8C/3, rounded up to 16 (LlamaKJV's rule)
  c.num_kv_heads = b.kv_heads;
  return c;
}

// The process's peak resident set (VmHWM) in MiB; 0 where /proc does not say.
double peak_resident_mib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
  }
  return 0.0;
}

void run(const BenchConfig& b, device::Device& dev, device::ProgramCache& cache, int min_steps, double min_seconds,
         const std::string& gemm, device::DType fprop, models::CheckpointPolicy policy) {
  const models::ModelConfig c = model_config_of(b);
  kernels::DeviceRuntime runtime(dev, cache, fprop, gemm);
  models::ModelOptions options{static_cast<std::size_t>(b.batch), 0, 256u << 20};
  options.checkpoint_policy = policy;
  const std::unique_ptr<models::Model> built = models::build_model(runtime, c, options);
  models::Model& model = *built;
  model.set_parameters(models::initial_parameters(model.layout(), 1, c.init_std()));
  models::AdamOptimizer adam(runtime, model.layout().total(), model.layout().decayed_end(), {});
  Rng rng(2);
  inputs::Batch batch{b.batch, b.seq_len, {}, {}, {}};
  for (int i = 0; i < b.batch * b.seq_len; ++i) {
    batch.ids.push_back(static_cast<int>(rng.next_u64() % static_cast<std::uint64_t>(b.vocab)));
    batch.targets.push_back(static_cast<int>(rng.next_u64() % static_cast<std::uint64_t>(b.vocab)));
    batch.weights.push_back(1.0f);
  }
  auto step = [&] {
    const double loss = model.forward_backward(batch);
    adam.step(model.parameter_buffer(), model.gradient_buffer(), 1e-4);
    dev.queue().finish();
    return loss;
  };
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  step();  // first step: kernel compilation (or cache loads) and allocation
  const double first_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  step();
  const auto since = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };
  double loss = 0, total_ms = 0, fastest_ms = 1e300, slowest_ms = 0;
  int steps = 0;
  // Each step ends with the queue drained, so each is timed alone.
  for (; steps < min_steps || total_ms < 1e3 * min_seconds; ++steps) {
    const auto t1 = Clock::now();
    loss = step();
    const double step_ms = since(t1);
    total_ms += step_ms;
    fastest_ms = std::min(fastest_ms, step_ms);
    slowest_ms = std::max(slowest_ms, step_ms);
  }
  const double ms = total_ms / steps;
  // GEMM share from separate, profiled steps (profiling serialises, so it is not in the timing).
  runtime.gemm().set_profiling(true);
  runtime.gemm().reset_stats();
  const auto t2 = Clock::now();
  for (int i = 0; i < steps; ++i) step();
  const double profiled_ms = since(t2) / steps;
  const kernels::GemmStats gemm_stats = runtime.gemm().stats();
  const double tokens = static_cast<double>(b.batch) * b.seq_len;
  const double gflops = c.flops_per_token(b.seq_len) * tokens / (ms * 1e-3) / 1e9;
  const std::string kv = b.kv_heads > 0 ? "/KV" + std::to_string(b.kv_heads) : "";  // one field for gpu_check.sh
  std::printf("%-6s L%d D%d H%d%s T%d V%d B%d  params %6.2fM  step %8.1f ms  %8.0f tok/s  %6.2f GFLOP/s  GEMM %4.1f%%  "
              "first step %.0f ms  loss %.3f%s\n",
              b.name, b.layers, b.dims, b.heads, kv.c_str(), b.seq_len, b.vocab, b.batch,
              static_cast<double>(model.layout().parameter_count()) / 1e6, ms, tokens / (ms * 1e-3), gflops,
              100.0 * gemm_stats.device_ms / steps / profiled_ms, first_ms, loss,
              steps > min_steps ? fmt::format("  ({} steps timed)", steps).c_str() : "");
  std::printf("       %s: activations %.1f MiB, %d of %d blocks recomputed per step, peak resident %.0f MiB\n",
              std::string(models::checkpoint_policy_name(policy)).c_str(),
              static_cast<double>(model.activation_bytes()) / (1024.0 * 1024.0), model.recomputed_blocks(), b.layers,
              peak_resident_mib());
  runtime.gemm().set_profiling(false);

  // Breakdown by kernel: device time of each kernel over one traced step (CLBlast's own kernels,
  // launched outside pax-ocl's queue wrapper, appear only in the GEMM share above).
  // The traced step is timed too: the mean of the timed steps above is another measure, and on a
  // machine whose speed drifts the two differ by more than the commands' gaps.
  dev.queue().set_tracing(true);
  const auto t3 = Clock::now();
  step();
  const double traced_step_ms = since(t3);
  dev.queue().set_tracing(false);
  device::KernelTimes times;
  for (const auto& e : dev.queue().take_trace()) times.add(e.kernel, e.ms);
  std::printf("       kernels (one step, device ms; %.1f ms traced of that step's %.1f ms; the timed steps %.1f to "
              "%.1f ms):  %s\n",
              times.total_ms(), traced_step_ms, fastest_ms, slowest_ms, times.format().c_str());
  std::fflush(stdout);
}

// `text` as a number within [low, high], whole where asked; else a one-line error naming `what`.
double number_in(const char* text, double low, double high, bool whole, const std::string& what) {
  char* end = nullptr;
  const double x = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(x >= low && x <= high) || (whole && x != static_cast<long>(x))) {
    throw std::invalid_argument(fmt::format("{} '{}': give a{} number from {:g} to {:g}", what, text,
                                            whole ? " whole" : "", low, high));
  }
  return x;
}

int run_bench(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "all";
  const int steps = argc > 2 ? static_cast<int>(number_in(argv[2], 1, 1e5, true, "steps")) : 5;
  const char* min_seconds_env = std::getenv("BENCH_MIN_SECONDS");
  const double min_seconds =
      min_seconds_env != nullptr && *min_seconds_env != '\0'
          ? number_in(min_seconds_env, 0, 3600, false, "BENCH_MIN_SECONDS")
          : 0.0;
  const std::string gemm = kernels::gemm_policy_from(argc > 3 ? std::optional<std::string>(argv[3]) : std::nullopt);
  const device::DType fprop = argc > 4 ? device::dtype_from_name(argv[4]) : device::DType::kF32;
  const models::CheckpointPolicy policy =
      argc > 5 ? models::checkpoint_policy_from_name(argv[5]) : models::CheckpointPolicy::kSaveEverything;
  std::string names;
  for (const BenchConfig& b : kConfigs) names += std::string(names.empty() ? "" : ", ") + b.name;
  const bool known = which == "all" || std::any_of(std::begin(kConfigs), std::end(kConfigs),
                                                   [&](const BenchConfig& b) { return which == b.name; });
  if (!known) throw std::invalid_argument("no config '" + which + "': use one of " + names + " or all");
  const auto selected = device::select_devices(device::enumerate_devices(),
                                               device::parse_device_selection(device::device_spec_from(std::nullopt)));
  device::Device dev(selected.front());
  device::ProgramCache cache;
  std::printf("device: %s (%s, %u CUs)  GEMM: %s  FPROP_DTYPE: %s  steps timed: %d%s\n", dev.info().name.c_str(),
              dev.info().platform_name.c_str(), dev.info().compute_units, gemm.c_str(),
              std::string(device::dtype_name(fprop)).c_str(), steps,
              min_seconds > 0 ? fmt::format(" or more, until {:g} s were", min_seconds).c_str() : "");
  for (const BenchConfig& b : kConfigs) {
    if (which == "all" || which == b.name) run(b, dev, cache, steps, min_seconds, gemm, fprop, policy);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  paxocl::kernels::restart_with_passive_openmp_waits(argv);  // before any thread starts
  spdlog::cfg::load_env_levels();
  if (const std::string w = paxocl::kernels::ignore_blis_arch_type_where_it_aborts(); !w.empty()) spdlog::warn(w);
  try {
    return run_bench(argc, argv);
  } catch (const std::exception& e) {  // a bad argument or a device that cannot run the config: one line
    std::fprintf(stderr, "bench_train_step: %s\n", e.what());
    return 2;
  }
}
