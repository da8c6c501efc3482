// `pax-ocl train` and `pax-ocl eval`: a named experiment (--fdl_config, or --fdl_config_file
// inheriting from one), Pax-style --fdl.NAME=VALUE overrides, and the job directory.
#include <algorithm>
#include <iostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "app/commands.h"
#include "app/experiment_flags.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "device/auto_fprop_dtype.h"
#include "device/device_selection.h"
#include "kernels_cl/auto_gemm.h"
#include "kernels_cl/cpu_flash_attention.h"
#include "kernels_cl/onednn_gemm.h"
#include "config/experiment.h"
#include "inputs/zero_shot_examples.h"
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
    {"gemm", "auto|blis|onednn|clblast|cpu-8x48|cpu-12x32|gpu-64x64|gpu-direct|tensor-core", "GEMM implementation (env PAX_OCL_GEMM; default auto)"},
    {"init_from", "FILE", "initialise from weights: an llm.c checkpoint (.bin) or Hugging Face GPT-2 .safetensors; "
                          "the file's architecture and settings replace the experiment's (a --fdl model flag that "
                          "contradicts them is an error)"},
    {"save_weights", "FILE", "train: write the final weights (checked at start-up). GPT: FILE.safetensors (Hugging "
                             "Face GPT-2), else an llm.c checkpoint (FILE.bin); LLaMA: FILE.safetensors with "
                             "config.json beside it, or a directory (config.json, model.safetensors); .bin is refused"},
    {"enable_checkpoint_saving", "true|false", "as --fdl.ENABLE_CHECKPOINT_SAVING (Pax's flag)"},
    {"task", "lambada|boolq", "eval: a zero-shot task on --data instead of eval_train and eval_test"},
    {"data", "FILE.jsonl", "eval --task: the examples, one JSON object per line (README: Zero-shot evaluation)"},
    {"output_json", "FILE", "eval --task: also write the metrics as JSON"},
};

void print_help(const char* command) {
  std::cout << fmt::format("Usage: pax-ocl {} [--fdl_config=NAME | --fdl_config_file=FILE] [--fdl.NAME=VALUE ...] [flags]\n\n",
                           command)
            << (std::string(command) == "train"
                    ? "Trains an experiment: evaluation every EVAL_INTERVAL_STEPS, TensorBoard summaries in job_log_dir.\n"
                    : "Evaluates an experiment's model on eval_train and eval_test, or zero-shot on a task's "
                      "examples (--task, --data): the newest checkpoint of --job_log_dir (--init_from's weights, "
                      "or the initialisation, if there is none).\n")
            << "\nFlags:\n"
            << format_flags(kJobFlags) << "\n"
            << experiments_help();
}

// The experiment the flags describe: a named one, a file, or (eval) the job directory's.
config::Experiment load_experiment(const CliArgs& args, bool from_job_dir) {
  args.validate(kJobFlags, hparam_names());
  // `pax-ocl eval --job_log_dir=runs/x` without an experiment named evaluates that job's resolved
  // experiment; otherwise the experiment named, or Default.
  std::optional<std::filesystem::path> job_experiment;
  if (const auto job = args.flag("job_log_dir");
      from_job_dir && job && std::filesystem::exists(std::filesystem::path(*job) / "experiment.json")) {
    job_experiment = std::filesystem::path(*job) / "experiment.json";
  }
  config::Experiment e = experiment_from_flags(args, job_experiment);
  if (const auto saving = args.flag("enable_checkpoint_saving")) e.set("ENABLE_CHECKPOINT_SAVING", *saving);
  return e;
}

config::JobFlags job_flags(const CliArgs& args, const config::Experiment& e) {
  config::JobFlags f;
  f.job_log_dir = args.flag("job_log_dir").value_or(scheduler::default_job_log_dir(e.name()).string());
  f.devices_spec = device::device_spec_from(args.flag("devices"));
  f.gemm_policy = kernels::gemm_policy_from(args.flag("gemm"));
  if (const auto w = args.flag("init_from")) f.init_from = *w;
  if (const auto w = args.flag("save_weights")) f.save_weights = *w;
  if (const auto t = args.flag("task")) {
    inputs::zero_shot_task_from_name(*t);  // its ConfigError now
    f.zero_shot_task = *t;
    const auto data = args.flag("data");
    if (!data) throw ConfigError("--task=" + *t + " needs --data=FILE.jsonl: the examples, one JSON object per line");
    f.zero_shot_data = *data;
  } else if (args.flag("data") || args.flag("output_json")) {
    throw ConfigError("--data and --output_json belong to a zero-shot evaluation: add --task=lambada or --task=boolq");
  }
  if (const auto j = args.flag("output_json")) {
    // Checked now: the JSON is written after the whole evaluation.
    if (const std::string why = why_cannot_write(*j); !why.empty()) {
      throw ConfigError(fmt::format("--output_json={}: {}; give a path in an existing, writable directory", *j, why));
    }
    f.output_json = *j;
  }
  return f;
}

// FPROP_DTYPE=auto (device/auto_fprop_dtype.h) resolved against the devices this process selects,
// agreed by every process (bfloat16 only where each chose it) and written into the experiment, so
// experiment.json and every checkpoint record the dtype the job runs. Returns the start-up line
// saying so (empty without auto), for the job to print once no configuration error can follow (a
// bad setting stays a one-line error). Devices that cannot be enumerated give float32 here and their
// own error when the job opens them.
std::string resolve_auto_fprop_dtype(config::Experiment& e, const config::JobFlags& flags,
                                     const collectives::ProcessWorld& world) {
  if (e.get_string("FPROP_DTYPE") != "auto") return "";
  device::AutoFpropDtype choice;
  try {
    const std::vector<device::DeviceInfo> devices =
        device::select_devices(device::enumerate_devices(), device::parse_device_selection(flags.devices_spec));
    choice = device::auto_fprop_dtype(devices, flags.gemm_policy, kernels::measure_onednn_bf16_gemm);
    // oneDNN alone multiplies no float32 probabilities by bfloat16 values: attention must be the host's flash
    // attention (DeviceRuntime refuses the pair otherwise).
    if (choice.dtype == device::DType::kBF16 && flags.gemm_policy == "onednn") {
      for (const device::DeviceInfo& d : devices) {
        if (const std::string why = kernels::cpu_flash_refusal(d); !why.empty()) {
          choice = {device::DType::kF32, fmt::format("--gemm=onednn runs attention's bfloat16 products only inside "
                                                     "the host's flash attention, which {} does not run ({})",
                                                     d.name, why)};
          break;
        }
      }
    }
  } catch (const std::runtime_error& error) {
    choice = {device::DType::kF32, fmt::format("no devices to choose by: {}", error.what())};
  }
  const std::vector<int> votes = world.all_gather(choice.dtype == device::DType::kBF16 ? 1 : 0);
  if (choice.dtype == device::DType::kBF16 && std::find(votes.begin(), votes.end(), 0) != votes.end()) {
    choice = {device::DType::kF32, "another process's devices run float32 faster or have no bfloat16 matrix instructions"};
  }
  const std::string name(device::dtype_name(choice.dtype));
  e.set_json("FPROP_DTYPE", name);
  return fmt::format("FPROP_DTYPE auto: {} ({})", name, choice.reason);
}

int run_job(const CliArgs& args, const collectives::ProcessWorld& world, const char* command, bool train) {
  if (args.flag_bool("help")) {
    if (world.rank() == 0) print_help(command);
    return kExitOk;
  }
  config::Experiment e = load_experiment(args, !train);
  config::JobFlags flags = job_flags(args, e);
  if (train && !flags.zero_shot_task.empty()) throw ConfigError("--task, --data and --output_json belong to pax-ocl eval");
  const std::string auto_dtype = resolve_auto_fprop_dtype(e, flags, world);
  config::JobConfig job = config::resolve_job(std::move(e), std::move(flags), world.size(), world.rank());
  job.fprop_dtype_choice = auto_dtype;
  // Before any training: a weights file the job could not write would be found only at the end.
  if (train && job.flags.save_weights) {
    models::check_weights_destination(*job.flags.save_weights, job.model, "save_weights", job.flags.job_log_dir);
  }
  return train ? scheduler::run_training(job, world) : scheduler::run_evaluation(job, world);
}

}  // namespace

int run_train(const CliArgs& args, const collectives::ProcessWorld& world) { return run_job(args, world, "train", true); }
int run_eval(const CliArgs& args, const collectives::ProcessWorld& world) { return run_job(args, world, "eval", false); }

}  // namespace paxocl::app
