// Checkpointer: when and how a training job saves (Pax's policy), and the background writer.
//   - due(step): every `every_n_steps`, and step 0 when the job has no checkpoint yet; the job
//     also saves at the end of training and on preemption (save() with any step);
//   - save(): the snapshot is already on the host (the device-to-host copy happened on the
//     training thread); with `async` a background thread writes it while training goes on, at most
//     one write in flight (a new save first waits for the previous one);
//   - multi-process: rank 0 prepares the temporary directory, every process writes its part,
//     rank 0 commits once all parts are in (checkpoint_writer.h);
//   - after each commit rank 0 applies retention (CHECKPOINT_MAX_TO_KEEP, keep-interval hours).
// A failed background write is reported by the next save() or wait() (DataError).
#pragma once

#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/training_state.h"
#include "collectives/process_world.h"
#include "config/experiment.h"
#include "models/parameter_layout.h"

namespace paxocl::checkpoint {

struct CheckpointPolicy {
  long every_n_steps = 1000;       // CHECKPOINT_EVERY_N_STEPS (0: only step 0, the end and preemption)
  long max_to_keep = 10;           // CHECKPOINT_MAX_TO_KEEP (>= 1)
  double keep_interval_hours = 0;  // CHECKPOINT_KEEP_INTERVAL_HOURS: also keep one per this many hours
  bool enabled = true;             // ENABLE_CHECKPOINT_SAVING
  bool async = true;               // ASYNC_CHECKPOINTING
};

class Checkpointer {
 public:
  // Rank 0 removes temporaries a crash left behind (collective: every rank constructs one).
  // `experiment`: the job's, whose model-defining settings a restored checkpoint must share
  // (read_checkpoint); null checks tensor names and shapes only. It must outlive the Checkpointer.
  Checkpointer(std::filesystem::path root, const collectives::ProcessWorld& world, CheckpointPolicy policy,
               const models::ParameterLayout& layout, const config::Experiment* experiment);
  ~Checkpointer();  // waits for the write in flight (errors are logged)
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Collective. The newest checkpoint every process reads back whole; unreadable newer ones are
  // logged and moved aside (CheckpointDir::move_aside). A checkpoint of another model is a ConfigError.
  // Saving then continues from the restored step: last_saved_step() is it (-1 when none).
  std::optional<RestoredState> restore();

  bool enabled() const { return policy_.enabled; }
  bool due(long step) const;
  long last_saved_step() const { return last_saved_; }  // restored or saved by this job; -1: none
  // Collective. `take_snapshot` runs on this thread (device-to-host copies), the write after it.
  void save(long step, const std::function<Snapshot()>& take_snapshot);
  void wait();  // the write in flight is done (rethrows its error)
  double last_blocking_ms() const { return blocking_ms_; }  // time the last save() held the training thread
  double last_wait_ms() const { return wait_ms_; }  // of which waiting for the previous write to finish
  double last_snapshot_ms() const { return snapshot_ms_; }  // of which taking the snapshot (device-to-host copies)

 private:
  void write(Snapshot snapshot);  // this process's part; rank 0 also commits and applies retention

  CheckpointDir dir_;
  const collectives::ProcessWorld& world_;
  CheckpointPolicy policy_;
  const models::ParameterLayout& layout_;
  const config::Experiment* experiment_;
  long last_saved_ = -1;
  double blocking_ms_ = 0, wait_ms_ = 0, snapshot_ms_ = 0;
  std::thread writer_;
  std::mutex mutex_;
  std::exception_ptr error_;
};

}  // namespace paxocl::checkpoint
