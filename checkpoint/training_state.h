// The training state a checkpoint holds, on the host, in flat ParameterLayout coordinates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/loss_scaler.h"
#include "proto/mesh.pb.h"

namespace paxocl::checkpoint {

// A contiguous range of the flat layout: parameters and Adam's two moments.
struct StateSlice {
  std::size_t offset = 0;
  std::vector<float> params, m, v;
};

// What one process hands to a save: its own slices (each element of the state is owned by
// exactly one process of the job) and the job-wide scalars (the same on every process).
struct Snapshot {
  long step = 0;
  std::vector<StateSlice> slices;
  long optimizer_steps_applied = 0, optimizer_steps_skipped = 0;
  std::optional<models::LossScaleState> loss_scale;  // float16 runs only
  std::string input_state;
  std::uint64_t seed = 0;
  std::string experiment_json;
  std::string sharding;
  proto::MeshSpec mesh;
};

// A checkpoint read back: the whole state, whatever mesh saved it.
struct RestoredState {
  long step = 0;
  std::string directory;
  std::vector<float> params, m, v;  // ParameterLayout::total() floats each
  long optimizer_steps_applied = 0, optimizer_steps_skipped = 0;
  std::optional<models::LossScaleState> loss_scale;  // float16 runs only
  std::string input_state;
  std::string sharding;  // how the saving job laid it out
};

}  // namespace paxocl::checkpoint
