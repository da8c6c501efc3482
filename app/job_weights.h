// A training job's model as the commands that read one (`export`, `sample`) need it: the job's
// resolved experiment (job_log_dir/experiment.json) and the parameters of one of its checkpoints
// (--step=N, or the newest good one). Host-only. One-line errors: ConfigError for a missing job or
// step, DataError when there is no checkpoint.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "config/experiment.h"
#include "models/weights_io.h"

namespace paxocl::app {

struct JobWeights {
  config::Experiment experiment;
  models::HostWeights weights;
  long step = 0;
  std::string checkpoint;  // its directory
};

JobWeights read_job_weights(const std::filesystem::path& job_dir, const std::optional<std::string>& step_flag);

}  // namespace paxocl::app
