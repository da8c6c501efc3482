// `pax-ocl train` and `pax-ocl eval`: a named experiment (--fdl_config, or --fdl_config_file
// inheriting from one), Pax-style --fdl.NAME=VALUE overrides, and the job directory.
#include <iostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "app/commands.h"
#include "common/errors.h"
#include "device/device_selection.h"
#include "kernels_cl/auto_gemm.h"
#include "models/experiment.h"
#include "models/weights_io.h"
#include "scheduler/train_job.h"

namespace paxocl::app {

namespace {

const FlagSpec kJobFlags[] = {
    kCommonFlags[0],
    kCommonFlags[1],
    {"fdl_config", "NAME", "the experiment (default: Default, a few-million-parameter GPT on the KJV)"},
    {"fdl_config_file", "FILE.json", "an experiment file: {\"fdl_config\": \"<base>\", \"NAME\": value, ...}"},
    {"job_log_dir", "DIR", "where the job writes its logs and summaries (default: a new directory under ./runs)"},
    {"devices", "auto|gpu|cpu|0,1", "device selection; the job uses the first selected device"},
    {"gemm", "auto|clblast|cpu-8x48|cpu-12x32|gpu-64x64", "GEMM implementation (env PAX_OCL_GEMM; default auto)"},
    {"init_from", "FILE", "initialise from weights: an llm.c checkpoint (.bin) or Hugging Face GPT-2 .safetensors; "
                          "the file's architecture replaces the experiment's"},
    {"save_weights", "FILE", "train: write the final weights (.safetensors, else llm.c format)"},
    {"enable_checkpoint_saving", "true|false", "as --fdl.ENABLE_CHECKPOINT_SAVING (Pax's flag)"},
};

void print_help(const char* command) {
  std::cout << fmt::format("Usage: pax-ocl {} [--fdl_config=NAME | --fdl_config_file=FILE] [--fdl.NAME=VALUE ...] [flags]\n\n",
                           command)
            << (std::string(command) == "train"
                    ? "Trains an experiment: evaluation every EVAL_INTERVAL_STEPS, TensorBoard summaries in job_log_dir.\n"
                    : "Evaluates an experiment's model on eval_train and eval_test: the newest checkpoint of "
                      "--job_log_dir (the initialisation if there is none).\n")
            << "\nFlags:\n"
            << format_flags(kJobFlags) << "\nExperiments: ";
  for (const auto& n : models::Experiment::names()) std::cout << n << " ";
  std::cout << "\n\nHyper-parameters (--fdl.NAME=VALUE; lists as [8,1,1], strings optionally quoted):\n";
  for (const auto& s : models::Experiment::schema()) std::cout << fmt::format("  {:<28} {}\n", s.name, s.help);
}

// The experiment the flags describe, with the weights file's architecture when --init_from is given.
models::Experiment load_experiment(const CliArgs& args, bool from_job_dir, std::optional<models::HostWeights>& init) {
  std::vector<std::string> fields;
  for (const auto& s : models::Experiment::schema()) fields.push_back(s.name);
  args.validate(kJobFlags, fields);
  const auto file = args.flag("fdl_config_file");
  if (file && args.flag("fdl_config")) throw ConfigError("give --fdl_config or --fdl_config_file, not both");
  // `pax-ocl eval --job_log_dir=runs/x` without an experiment named evaluates that job's resolved
  // experiment; otherwise the experiment named, or Default.
  std::optional<std::filesystem::path> from = file ? std::optional<std::filesystem::path>(*file) : std::nullopt;
  if (const auto job = args.flag("job_log_dir"); from_job_dir && !from && !args.flag("fdl_config") && job &&
                                                   std::filesystem::exists(std::filesystem::path(*job) / "experiment.json")) {
    from = std::filesystem::path(*job) / "experiment.json";
  }
  models::Experiment e = from ? models::Experiment::from_file(*from)
                              : models::Experiment::named(args.flag("fdl_config").value_or("Default"));
  for (const auto& [name, value] : args.fdl_overrides()) e.set(name, value);
  if (const auto saving = args.flag("enable_checkpoint_saving")) e.set("ENABLE_CHECKPOINT_SAVING", *saving);
  if (const auto weights = args.flag("init_from")) {
    init = models::load_weights_file(*weights, static_cast<int>(e.get_int("NUM_HEADS")), 1);
    const models::GptConfig& c = init->config;
    e.set_json("NUM_LAYERS", c.num_layers);
    e.set_json("MODEL_DIMS", c.model_dims);
    e.set_json("HIDDEN_DIMS", c.hidden_dims);
    e.set_json("NUM_HEADS", c.num_heads);
    e.set_json("DIMS_PER_HEAD", c.dims_per_head);
    e.set_json("MAX_SEQ_LEN", c.max_seq_len);
    e.set_json("VOCAB_SIZE", c.vocab_size);
    init->config.init_std = static_cast<float>(e.get_float("INIT_STD"));
  }
  return e;
}

scheduler::JobOptions job_options(const CliArgs& args, const models::Experiment& e,
                                  const std::optional<models::HostWeights>& init) {
  scheduler::JobOptions o;
  o.job_log_dir = args.flag("job_log_dir").value_or(scheduler::default_job_log_dir(e.name()).string());
  o.devices_spec = device::device_spec_from(args.flag("devices"));
  o.gemm_policy = kernels::gemm_policy_from(args.flag("gemm"));
  if (init) o.init_weights = std::make_shared<models::HostWeights>(*init);
  if (const auto f = args.flag("save_weights")) o.save_weights = *f;
  return o;
}

int run_job(const CliArgs& args, const collectives::ProcessWorld& world, const char* command, bool train) {
  if (args.flag_bool("help")) {
    if (world.rank() == 0) print_help(command);
    return kExitOk;
  }
  std::optional<models::HostWeights> init;
  const models::Experiment e = load_experiment(args, !train, init);
  const scheduler::JobOptions o = job_options(args, e, init);
  return train ? scheduler::run_training(e, o, world) : scheduler::run_evaluation(e, o, world);
}

}  // namespace

int run_train(const CliArgs& args, const collectives::ProcessWorld& world) { return run_job(args, world, "train", true); }
int run_eval(const CliArgs& args, const collectives::ProcessWorld& world) { return run_job(args, world, "eval", false); }

}  // namespace paxocl::app
