// `pax-ocl export`: a job's checkpoint as a weights file: for a GPT, Hugging Face GPT-2 safetensors
// (names "transformer.h.0.attn.c_attn.weight", ...; loadable with transformers' GPT2LMHeadModel) or
// an llm.c .bin; for a LLaMA, a Hugging Face LLaMA checkpoint (a directory, or FILE.safetensors with
// config.json beside it; LlamaForCausalLM.from_pretrained reads it). Host-only: no device is opened.
#include <iostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "app/commands.h"
#include "app/job_weights.h"
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
    {"output", "FILE", "where to write (required). GPT: FILE.safetensors (Hugging Face GPT-2 names), else an llm.c "
                       "checkpoint (FILE.bin); LLaMA: FILE.safetensors with config.json beside it, or a directory "
                       "(config.json, model.safetensors); .bin is refused (llm.c has no LLaMA)"},
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
  const JobWeights job_weights = read_job_weights(*job, args.flag("step"));
  models::check_weights_destination(*output, job_weights.weights.config, "output", {});
  if (world.rank() == 0) {
    models::save_weights_file(*output, job_weights.weights);
    std::cout << fmt::format("exported {} (step {}) to {}\n", job_weights.checkpoint, job_weights.step, *output);
  }
  return kExitOk;
}

}  // namespace paxocl::app
