// Reading a checkpoint back, whole, whatever mesh saved it. Everything is verified before use:
// the manifest parses, every file has its recorded size and CRC32C, every tensor of the model's
// layout is present with its shape and tiled by its pieces. A mismatch is a DataError naming the
// file (the caller falls back to an older checkpoint); a checkpoint of another model is a
// ConfigError: a tensor of the layout is missing or has another shape, the manifest holds a tensor
// the layout lacks, or (given `requested`) the experiment the manifest records differs from it in a
// setting that defines the model (config/model_settings.h), each named with both values. A job's
// readers pass its experiment; a manifest that records none is then refused, not guessed at.
// `requested` null checks names and shapes only (format tests).
#pragma once

#include <optional>

#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/training_state.h"
#include "config/experiment.h"
#include "models/parameter_layout.h"

namespace paxocl::checkpoint {

RestoredState read_checkpoint(const CheckpointDir& dir, long step, const models::ParameterLayout& layout,
                              const config::Experiment* requested);

// The newest checkpoint that reads back whole; each one skipped is reported through `skipped`
// (its path and why). Nothing when there is none.
std::optional<RestoredState> read_latest_checkpoint(const CheckpointDir& dir, const models::ParameterLayout& layout,
                                                    const config::Experiment* requested,
                                                    const std::function<void(const std::string&)>& skipped);

// The manifest's recorded experiment alone against `requested` (ConfigError as read_checkpoint
// gives; DataError if the manifest is missing or does not parse): a job checks its newest
// checkpoint before it writes anything into the job directory.
void require_same_model(const CheckpointDir& dir, long step, const config::Experiment& requested);

// The manifest alone (DataError if it is missing or does not parse).
struct ManifestSummary {
  long step = 0;
  std::int64_t unix_time = 0;
};
ManifestSummary read_manifest_summary(const CheckpointDir& dir, long step);

}  // namespace paxocl::checkpoint
