// The training state a checkpoint holds, on the host, in flat ParameterLayout coordinates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "models/loss_scaler.h"
#include "proto/mesh.pb.h"

namespace paxocl::checkpoint {

// A contiguous range of the flat layout: parameters and Adam's two moments, as views of host memory
// that `storage` keeps alive: vectors of its own (of()), or a step program's staging, which the
// program reuses for its next snapshot only once every slice viewing it is gone.
struct StateSlice {
  std::size_t offset = 0;
  std::span<const float> params, m, v;  // the same length each
  std::shared_ptr<const void> storage;

  static StateSlice of(std::size_t offset, std::vector<float> params, std::vector<float> m, std::vector<float> v) {
    struct Owned {
      std::vector<float> params, m, v;
    };
    auto owned = std::make_shared<const Owned>(Owned{std::move(params), std::move(m), std::move(v)});
    return {offset, owned->params, owned->m, owned->v, owned};
  }
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
