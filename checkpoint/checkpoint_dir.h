// CheckpointDir: Pax's layout of job_log_dir/checkpoints: one directory per saved step,
// checkpoint_%08d, holding manifest.pb and the processes' safetensors files. A save is built in
// tmp.checkpoint_%08d and renamed into place once complete, so a listed checkpoint is always whole;
// deletion renames to tmp.deleted.checkpoint_%08d first, so it is atomic too; every tmp.* entry is a
// temporary a crash left behind and is removed at the next start. A checkpoint that does not read
// back is moved aside to corrupt.checkpoint_%08d (kept for inspection, never listed or deleted). Retention keeps the newest
// `max_to_keep` plus, going from the oldest, one per `keep_interval_hours` (0: none extra).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace paxocl::checkpoint {

class CheckpointDir {
 public:
  explicit CheckpointDir(std::filesystem::path root) : root_(std::move(root)) {}

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path final_path(long step) const;      // root/checkpoint_%08d
  std::filesystem::path temporary_path(long step) const;  // root/tmp.checkpoint_%08d
  static constexpr const char* kManifest = "manifest.pb";

  std::vector<long> steps() const;  // committed checkpoints, ascending
  // Removes every tmp.* entry and finishes a publish() a crash cut off; returns how many were removed.
  int remove_temporaries() const;

  // Renames temporary_path(step) to final_path(step), durably. A checkpoint of that step already
  // there is replaced: moved aside first, removed once the new one is in place (a crash in between
  // leaves both on disk, never neither).
  void publish(long step) const;
  // Atomically unlists the checkpoint of `step`, then deletes it.
  void remove(long step) const;
  // Moves the checkpoint of `step` to corrupt.checkpoint_%08d[.N]; returns the new path.
  std::filesystem::path move_aside(long step) const;

  struct Saved {
    long step = 0;
    std::int64_t unix_time = 0;
  };
  // The steps retention would delete from `saved` (ascending by step).
  static std::vector<long> to_delete(const std::vector<Saved>& saved, long max_to_keep, double keep_interval_hours);

 private:
  std::filesystem::path root_;
};

}  // namespace paxocl::checkpoint
