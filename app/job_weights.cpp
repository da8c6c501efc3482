#include "app/job_weights.h"

#include <charconv>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "checkpoint/checkpoint_reader.h"
#include "common/errors.h"
#include "common/regular_file.h"

namespace paxocl::app {

JobWeights read_job_weights(const std::filesystem::path& job_dir, const std::optional<std::string>& step_flag) {
  if (const std::string why = why_not_directory(job_dir); !why.empty()) {
    throw ConfigError(fmt::format("--job_log_dir={}: {}; give the directory of a training job", job_dir.string(), why));
  }
  const std::filesystem::path experiment_file = job_dir / "experiment.json";
  if (!std::filesystem::exists(experiment_file)) {
    throw ConfigError(fmt::format("--job_log_dir={}: no experiment.json there; give the directory of a training job",
                                  job_dir.string()));
  }
  config::Experiment e = config::Experiment::from_file(experiment_file);  // every value range-checked
  const models::ModelConfig config = e.model_config();                     // validated
  const models::ParameterLayout layout(config, 1);                         // sizes overflow-checked
  const checkpoint::CheckpointDir dir(job_dir / "checkpoints");
  std::optional<checkpoint::RestoredState> state;
  if (step_flag) {
    long n = -1;
    const auto [end, ec] = std::from_chars(step_flag->data(), step_flag->data() + step_flag->size(), n);
    if (ec != std::errc() || end != step_flag->data() + step_flag->size() || n < 0) {
      throw ConfigError(fmt::format("--step={}: give a step number, e.g. --step=1000", *step_flag));
    }
    if (!std::filesystem::exists(dir.final_path(n))) {
      throw ConfigError(fmt::format("--step={}: {} does not exist", n, dir.final_path(n).string()));
    }
    state = checkpoint::read_checkpoint(dir, n, layout, &e);
  } else {
    state = checkpoint::read_latest_checkpoint(dir, layout, &e, [](const std::string& why) { spdlog::warn("skipping: {}", why); });
  }
  if (!state) throw DataError(fmt::format("{}: no checkpoint", dir.root().string()));
  return JobWeights{std::move(e), models::HostWeights{config, layout.alignment(), std::move(state->params)}, state->step,
                    state->directory};
}

}  // namespace paxocl::app
