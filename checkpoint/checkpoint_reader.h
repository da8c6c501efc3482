// Reading a checkpoint back, whole, whatever mesh saved it. Everything is verified before use:
// the manifest parses, every file has its recorded size and CRC32C, every tensor of the model's
// layout is present with its shape and tiled by its pieces. A mismatch is a DataError naming the
// file (the caller falls back to an older checkpoint); a checkpoint of another model (names or
// shapes differ) is a ConfigError.
#pragma once

#include <optional>

#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/training_state.h"
#include "models/parameter_layout.h"

namespace paxocl::checkpoint {

RestoredState read_checkpoint(const CheckpointDir& dir, long step, const models::ParameterLayout& layout);

// The newest checkpoint that reads back whole; each one skipped is reported through `skipped`
// (its path and why). Nothing when there is none.
std::optional<RestoredState> read_latest_checkpoint(const CheckpointDir& dir, const models::ParameterLayout& layout,
                                                    const std::function<void(const std::string&)>& skipped);

// The manifest alone (DataError if it is missing or does not parse).
struct ManifestSummary {
  long step = 0;
  std::int64_t unix_time = 0;
};
ManifestSummary read_manifest_summary(const CheckpointDir& dir, long step);

}  // namespace paxocl::checkpoint
