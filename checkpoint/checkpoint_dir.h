// CheckpointDir: Pax's layout of job_log_dir/checkpoints: one directory per saved step,
// checkpoint_%08d, holding manifest.pb and the processes' safetensors files. A save is built in
// tmp.checkpoint_%08d and renamed into place once complete, so a listed checkpoint is always whole;
// temporaries left by a crash are removed at the next start. Retention keeps the newest
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
  int remove_temporaries() const;   // returns how many were removed

  struct Saved {
    long step = 0;
    std::int64_t unix_time = 0;
  };
  // The steps retention would delete from `saved` (ascending by step).
  static std::vector<long> to_delete(const std::vector<Saved>& saved, int max_to_keep, double keep_interval_hours);

 private:
  std::filesystem::path root_;
};

}  // namespace paxocl::checkpoint
