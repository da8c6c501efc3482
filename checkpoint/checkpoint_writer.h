// Writing a checkpoint, in two parts (the layout is CheckpointDir's):
//   write_process_part: every process writes its own pieces of the state into the temporary
//     directory: part-%05d.safetensors (pieces keyed "params/<tensor>", "adam_m/...", "adam_v/...";
//     a piece that is all of its tensor has the tensor's shape, others are 1-D "<key>@<begin>"),
//     then part-%05d.json (its size, CRC32C and piece list), each fsynced and renamed into place;
//   commit (rank 0 only): waits for every process's part, writes manifest.pb (proto/checkpoint.proto),
//     fsyncs, and renames the directory to checkpoint_%08d, the moment the checkpoint exists.
#pragma once

#include <chrono>

#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/training_state.h"
#include "models/parameter_layout.h"

namespace paxocl::checkpoint {

void write_process_part(const CheckpointDir& dir, const Snapshot& snapshot, const models::ParameterLayout& layout,
                        int process);
// Throws DataError when a part is missing after `timeout` or the parts do not tile the state.
void commit(const CheckpointDir& dir, const Snapshot& snapshot, const models::ParameterLayout& layout, int processes,
            std::chrono::seconds timeout);

}  // namespace paxocl::checkpoint
