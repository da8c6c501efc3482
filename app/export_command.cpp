// `pax-ocl export`: a job's checkpoint as a weights file: Hugging Face GPT-2 safetensors (names
// "transformer.h.0.attn.c_attn.weight", ...; loadable with transformers' GPT2LMHeadModel) or an
// llm.c .bin. Host-only: no device is opened.
#include <charconv>
#include <iostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "app/commands.h"
#include "checkpoint/checkpoint_reader.h"
#include "common/errors.h"
#include "config/experiment.h"
#include "models/weights_io.h"

namespace paxocl::app {

namespace {
const FlagSpec kExportFlags[] = {
    kCommonFlags[0],
    kCommonFlags[1],
    {"job_log_dir", "DIR", "the training job whose checkpoint to export (required)"},
    {"step", "N", "the checkpoint of step N (default: the newest good one)"},
    {"output", "FILE", "where to write: FILE.safetensors (Hugging Face GPT-2 names) or FILE.bin (llm.c) (required)"},
};
}  // namespace

int run_export(const CliArgs& args, const collectives::ProcessWorld& world) {
  if (args.flag_bool("help")) {
    if (world.rank() == 0) {
      std::cout << "Usage: pax-ocl export --job_log_dir=DIR --output=FILE.safetensors [--step=N]\n\n"
                   "Writes a job's checkpoint (its model variables) as a weights file.\n\nFlags:\n"
                << format_flags(kExportFlags);
    }
    return kExitOk;
  }
  args.validate(kExportFlags, {});
  const auto job = args.flag("job_log_dir");
  const auto output = args.flag("output");
  if (!job || !output) throw ConfigError("export needs --job_log_dir=DIR and --output=FILE.safetensors");
  const std::filesystem::path experiment_file = std::filesystem::path(*job) / "experiment.json";
  if (!std::filesystem::exists(experiment_file)) {
    throw ConfigError(fmt::format("--job_log_dir={}: no experiment.json there; give the directory of a training job", *job));
  }
  const config::Experiment e = config::Experiment::from_file(experiment_file);  // every value range-checked
  const models::ModelConfig config = e.model_config();                           // validated
  const models::ParameterLayout layout(config, 1);                             // sizes overflow-checked
  const checkpoint::CheckpointDir dir(std::filesystem::path(*job) / "checkpoints");
  std::optional<checkpoint::RestoredState> state;
  if (const auto step = args.flag("step")) {
    long n = -1;
    const auto [end, ec] = std::from_chars(step->data(), step->data() + step->size(), n);
    if (ec != std::errc() || end != step->data() + step->size() || n < 0) {
      throw ConfigError(fmt::format("--step={}: give a step number, e.g. --step=1000", *step));
    }
    if (!std::filesystem::exists(dir.final_path(n))) {
      throw ConfigError(fmt::format("--step={}: {} does not exist", n, dir.final_path(n).string()));
    }
    state = checkpoint::read_checkpoint(dir, n, layout);
  } else {
    state = checkpoint::read_latest_checkpoint(dir, layout, [](const std::string& why) { spdlog::warn("skipping: {}", why); });
  }
  if (!state) throw DataError(fmt::format("{}: no checkpoint to export", dir.root().string()));
  if (world.rank() == 0) {
    models::save_weights_file(*output, models::HostWeights{config, layout.alignment(), state->params});
    std::cout << fmt::format("exported {} (step {}) to {}\n", state->directory, state->step, *output);
  }
  return kExitOk;
}

}  // namespace paxocl::app
