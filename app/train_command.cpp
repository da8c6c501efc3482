// `pax-ocl train`: trains the GPT on one OpenCL device. The first form of the training job: its
// hyper-parameters are Pax's names, set with --fdl.NAME=VALUE; --data picks the input (the KJV
// by default, prepared on first use); --init_from starts from an llm.c or safetensors weights file
// and --save_weights writes the result. Named experiments, evaluation, summaries, checkpoints and
// multi-device training build on this.
#include <chrono>
#include <functional>
#include <iostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "app/agreed_step.h"
#include "app/commands.h"
#include "models/hparam_values.h"
#include "device/device_selection.h"
#include "inputs/dataset.h"
#include "kernels_cl/auto_gemm.h"
#include "models/adam_optimizer.h"
#include "models/gpt_model.h"
#include "models/lr_schedule.h"

namespace paxocl::app {

namespace {

struct TrainSettings {
  models::GptConfig model;  // defaults: a GPT of ~0.14M parameters that trains in seconds on a CPU
  double batch = 8;         // PERCORE_BATCH_SIZE (sequences per device; may be fractional in Pax)
  long max_steps = 200;
  long log_interval = 10;   // SUMMARY_INTERVAL_STEPS
  long seed = 1234;
  long prefetch_depth = 2;  // PREFETCH_DEPTH: batches prepared ahead of the device
  models::LrSchedule lr{3e-3, 10, 10, 10000, 0.1};
  models::AdamConfig adam;
  TrainSettings() {
    model.num_layers = 2;
    model.model_dims = 64;
    model.hidden_dims = 256;
    model.num_heads = 4;
    model.dims_per_head = 16;
    model.max_seq_len = 64;
    model.vocab_size = 512;
  }
};

struct HParam {
  std::string name;
  std::string help;
  std::function<void(TrainSettings&, std::string_view)> set;
};

template <typename Field>
HParam int_param(const char* name, const char* help, Field TrainSettings::*member) {
  return {name, help, [=](TrainSettings& s, std::string_view v) { s.*member = static_cast<Field>(models::parse_int_value(name, v)); }};
}

const std::vector<HParam>& hparams() {
  using S = TrainSettings;
  static const std::vector<HParam> table = {
      {"NUM_LAYERS", "transformer blocks", [](S& s, std::string_view v) { s.model.num_layers = static_cast<int>(models::parse_int_value("NUM_LAYERS", v)); }},
      {"MODEL_DIMS", "model width C", [](S& s, std::string_view v) { s.model.model_dims = static_cast<int>(models::parse_int_value("MODEL_DIMS", v)); }},
      {"HIDDEN_DIMS", "MLP width", [](S& s, std::string_view v) { s.model.hidden_dims = static_cast<int>(models::parse_int_value("HIDDEN_DIMS", v)); }},
      {"NUM_HEADS", "attention heads", [](S& s, std::string_view v) { s.model.num_heads = static_cast<int>(models::parse_int_value("NUM_HEADS", v)); }},
      {"DIMS_PER_HEAD", "width of one head", [](S& s, std::string_view v) { s.model.dims_per_head = static_cast<int>(models::parse_int_value("DIMS_PER_HEAD", v)); }},
      {"MAX_SEQ_LEN", "sequence length", [](S& s, std::string_view v) { s.model.max_seq_len = static_cast<int>(models::parse_int_value("MAX_SEQ_LEN", v)); }},
      {"VOCAB_SIZE", "vocabulary size", [](S& s, std::string_view v) { s.model.vocab_size = static_cast<int>(models::parse_int_value("VOCAB_SIZE", v)); }},
      {"INIT_STD", "Gaussian init std", [](S& s, std::string_view v) { s.model.init_std = static_cast<float>(models::parse_float_value("INIT_STD", v)); }},
      {"PERCORE_BATCH_SIZE", "sequences per device per step", [](S& s, std::string_view v) { s.batch = models::parse_float_value("PERCORE_BATCH_SIZE", v); }},
      int_param("MAX_STEPS", "training steps", &S::max_steps),
      int_param("SUMMARY_INTERVAL_STEPS", "steps between log lines", &S::log_interval),
      int_param("SEED", "seed of the init and the data", &S::seed),
      int_param("PREFETCH_DEPTH", "batches prepared ahead by the input thread (0: none)", &S::prefetch_depth),
      {"LEARNING_RATE", "peak learning rate", [](S& s, std::string_view v) { s.lr.peak = models::parse_float_value("LEARNING_RATE", v); }},
      {"LR_COS_WARMUP", "linear warm-up steps", [](S& s, std::string_view v) { s.lr.warmup = models::parse_int_value("LR_COS_WARMUP", v); }},
      {"LR_COS_DECAY_START", "cosine decay start", [](S& s, std::string_view v) { s.lr.decay_start = models::parse_int_value("LR_COS_DECAY_START", v); }},
      {"LR_COS_DECAY_END", "cosine decay end", [](S& s, std::string_view v) { s.lr.decay_end = models::parse_int_value("LR_COS_DECAY_END", v); }},
      {"LR_COS_MIN_RATIO", "final LR / peak", [](S& s, std::string_view v) { s.lr.min_ratio = models::parse_float_value("LR_COS_MIN_RATIO", v); }},
      {"ADAM_BETA1", "Adam beta1", [](S& s, std::string_view v) { s.adam.beta1 = models::parse_float_value("ADAM_BETA1", v); }},
      {"ADAM_BETA2", "Adam beta2", [](S& s, std::string_view v) { s.adam.beta2 = models::parse_float_value("ADAM_BETA2", v); }},
      {"ADAM_EPSILON", "Adam epsilon", [](S& s, std::string_view v) { s.adam.epsilon = models::parse_float_value("ADAM_EPSILON", v); }},
      {"WEIGHT_DECAY", "decoupled weight decay (matrices)", [](S& s, std::string_view v) { s.adam.weight_decay = models::parse_float_value("WEIGHT_DECAY", v); }},
      {"CLIP_GRADIENT_NORM_TO_VALUE", "global-norm clip (<= 0: off)", [](S& s, std::string_view v) { s.adam.clip_gradient_norm = models::parse_float_value("CLIP_GRADIENT_NORM_TO_VALUE", v); }},
  };
  return table;
}

const FlagSpec kTrainFlags[] = {
    kCommonFlags[0],
    kCommonFlags[1],
    {"devices", "auto|gpu|cpu|0,1", "device selection; training uses the first selected device"},
    {"init_from", "FILE", "initialise from weights: an llm.c checkpoint (.bin) or Hugging Face GPT-2 .safetensors"},
    {"save_weights", "FILE", "write the trained weights (.safetensors, else llm.c format)"},
    {"gemm", "auto|clblast|cpu-8x48|cpu-12x32|gpu-64x64", "GEMM implementation (env PAX_OCL_GEMM; default auto)"},
    {"data", "kjv|synthetic|DIR|text:FILES|SHARDS",
     "training data: the KJV (prepared on first use), the synthetic stream, a `pax-ocl data prepare` directory, raw "
     "text (with --tokenizer) or token shard files (default kjv)"},
    {"tokenizer", "FILE.model", "SentencePiece model for --data=text:FILES"},
};

void print_help() {
  std::cout << "Usage: pax-ocl train [flags] [--fdl.NAME=VALUE ...]\n\n"
               "Trains the GPT on one device and prints the loss.\n\nFlags:\n";
  std::cout << format_flags(kTrainFlags);
  std::cout << "\nHyper-parameters (--fdl.NAME=VALUE):\n";
  for (const HParam& h : hparams()) std::cout << fmt::format("  {:<28} {}\n", h.name, h.help);
}

}  // namespace

int run_train(const CliArgs& args, const collectives::ProcessWorld& world) {
  const auto process_start = std::chrono::steady_clock::now();
  if (args.flag_bool("help")) {
    if (world.rank() == 0) print_help();
    return kExitOk;
  }
  TrainSettings s;
  std::vector<std::string> names;
  for (const HParam& h : hparams()) names.push_back(h.name);
  args.validate(kTrainFlags, names);
  if (world.size() > 1) {
    throw ConfigError("pax-ocl train runs in one process for now; launch it without mpirun/srun");
  }
  for (const auto& [name, value] : args.fdl_overrides()) {
    for (const HParam& h : hparams()) {
      if (h.name == name) h.set(s, value);
    }
  }
  const auto selected = device::select_devices(device::enumerate_devices(),
                                               device::parse_device_selection(device::device_spec_from(args.flag("devices"))));
  device::Device dev(selected.front());
  device::ProgramCache cache;

  std::optional<models::HostWeights> init;
  if (const auto file = args.flag("init_from")) {
    init = models::load_weights_file(*file, s.model.num_heads, 1);
    init->config.init_std = s.model.init_std;
    s.model = init->config;  // the file decides the architecture
    spdlog::info("initialising from {} (L={} C={} NH={} T={} V={})", *file, s.model.num_layers, s.model.model_dims,
                 s.model.num_heads, s.model.max_seq_len, s.model.vocab_size);
  }
  s.model.validate();
  s.lr.validate();
  if (s.max_steps < 0 || s.log_interval < 1) {
    throw ConfigError(fmt::format("SUMMARY_INTERVAL_STEPS={} must be >= 1 and MAX_STEPS={} >= 0", s.log_interval, s.max_steps));
  }
  const int T = s.model.max_seq_len, B = inputs::per_host_batch_size(s.batch, 1, world.size());
  inputs::InputParams input_params;
  input_params.seq_len = T;
  input_params.batch_size = B;
  input_params.num_infeed_hosts = world.size();
  input_params.infeed_host_index = world.rank();
  input_params.seed = static_cast<std::uint64_t>(s.seed);
  input_params.prefetch_depth = static_cast<int>(s.prefetch_depth);
  input_params.tokenizer_model = args.flag("tokenizer").value_or("");
  const auto input = inputs::make_input(args.flag("data").value_or("kjv"), "train", input_params, s.model.vocab_size);
  models::GptModel model(dev, cache, s.model, models::GptModelOptions{static_cast<std::size_t>(B), 0, 64u << 20,
                                                                       kernels::gemm_policy_from(args.flag("gemm"))});
  if (init) {
    model.load_weights(*init);
  } else {
    model.init(static_cast<std::uint64_t>(s.seed));
  }
  models::AdamOptimizer adam(dev, model.kernels(), model.layout().total(), model.layout().decayed_end(), s.adam);
  std::cout << fmt::format("training on {}: {:.2f}M parameters, batch {} x {} tokens, {} steps\n", dev.info().name,
                           static_cast<double>(model.layout().parameter_count()) / 1e6, B, T, s.max_steps);
  auto start = std::chrono::steady_clock::now();
  for (long step = 0; step < s.max_steps; ++step) {
    const double loss = model.forward_backward(*input->get_next());
    const double lr = s.lr.at(step);
    const models::OptimizerStepStats stats = adam.step(model.parameter_buffer(), model.gradient_buffer(), lr);
    if (step == 0) {
      dev.queue().finish();
      const auto built = cache.stats();
      spdlog::info("first step done {:.0f} ms after start (programs: {} from the cache, {} compiled, {:.0f} ms building)",
                   std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - process_start).count(),
                   built.hits, built.misses, built.build_ms);
    }
    if (step % s.log_interval == 0 || step + 1 == s.max_steps) {
      dev.queue().finish();
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const long steps_done = step % s.log_interval == 0 ? (step == 0 ? 1 : s.log_interval) : (step % s.log_interval);
      std::cout << fmt::format("step {:>6}  loss {:.6f}  lr {:.3e}  grad_norm {:.4f}{}  {:.0f} tok/s\n", step, loss, lr,
                               stats.grad_norm, stats.applied ? "" : " (skipped: not finite)",
                               static_cast<double>(steps_done) * B * T / secs)
                << std::flush;
      start = std::chrono::steady_clock::now();
    }
  }
  if (adam.steps_skipped() > 0) spdlog::warn("{} step(s) skipped for non-finite gradients", adam.steps_skipped());
  if (const auto file = args.flag("save_weights")) {
    models::save_weights_file(*file, model.save_weights());
    spdlog::info("weights written to {}", *file);
  }
  return kExitOk;
}

}  // namespace paxocl::app
