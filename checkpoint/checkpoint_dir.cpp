#include "checkpoint/checkpoint_dir.h"

#include <algorithm>
#include <charconv>
#include <set>

#include <fmt/format.h>

#include "common/atomic_file.h"
#include "common/errors.h"

namespace paxocl::checkpoint {

namespace fs = std::filesystem;

namespace {
constexpr std::string_view kPrefix = "checkpoint_", kTemporaryPrefix = "tmp.checkpoint_", kAnyTemporary = "tmp.",
                           kReplacedPrefix = "replaced.checkpoint_";

// The step of "checkpoint_%08d" (digits only after the prefix), or -1.
long step_of(const std::string& name, std::string_view prefix) {
  if (!name.starts_with(prefix) || name.size() == prefix.size()) return -1;
  long step = -1;
  const char* end = name.data() + name.size();
  const auto [ptr, ec] = std::from_chars(name.data() + prefix.size(), end, step);
  return ec == std::errc() && ptr == end ? step : -1;
}
}  // namespace

fs::path CheckpointDir::final_path(long step) const { return root_ / fmt::format("{}{:08}", kPrefix, step); }
fs::path CheckpointDir::temporary_path(long step) const { return root_ / fmt::format("{}{:08}", kTemporaryPrefix, step); }

std::vector<long> CheckpointDir::steps() const {
  std::vector<long> steps;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root_, ec)) {
    const long step = step_of(entry.path().filename().string(), kPrefix);
    if (step >= 0 && entry.is_directory()) steps.push_back(step);
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

int CheckpointDir::remove_temporaries() const {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(kAnyTemporary)) {
      fs::remove_all(entry.path(), ec);
      ++removed;
    } else if (const long step = step_of(name, kReplacedPrefix); step >= 0) {
      // publish() was cut off between its renames: the old checkpoint is the one to keep.
      if (fs::exists(final_path(step))) {
        fs::remove_all(entry.path(), ec);
      } else {
        fs::rename(entry.path(), final_path(step), ec);
      }
    }
  }
  return removed;
}

namespace {
// rename(2), or a DataError naming both paths and the system's reason.
void rename_or_fail(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec) throw DataError(fmt::format("cannot rename {} to {}: {}", from.string(), to.string(), ec.message()));
}
}  // namespace

void CheckpointDir::publish(long step) const {
  const fs::path final = final_path(step);
  std::error_code ec;
  if (fs::exists(final, ec)) {
    const fs::path replaced = root_ / fmt::format("{}{:08}", kReplacedPrefix, step);
    fs::remove_all(replaced, ec);
    rename_or_fail(final, replaced);
    rename_or_fail(temporary_path(step), final);
    sync_directory(root_);
    fs::remove_all(replaced, ec);
    return;
  }
  rename_or_fail(temporary_path(step), final);
  sync_directory(root_);
}

void CheckpointDir::remove(long step) const {
  const fs::path doomed = root_ / fmt::format("tmp.deleted.{}{:08}", kPrefix, step);
  std::error_code ec;
  fs::remove_all(doomed, ec);
  rename_or_fail(final_path(step), doomed);
  sync_directory(root_);
  fs::remove_all(doomed, ec);
}

fs::path CheckpointDir::move_aside(long step) const {
  fs::path aside = root_ / fmt::format("corrupt.{}{:08}", kPrefix, step);
  for (int n = 1; fs::exists(aside); ++n) aside = root_ / fmt::format("corrupt.{}{:08}.{}", kPrefix, step, n);
  rename_or_fail(final_path(step), aside);
  sync_directory(root_);
  return aside;
}

std::vector<long> CheckpointDir::to_delete(const std::vector<Saved>& saved, long max_to_keep, double keep_interval_hours) {
  std::set<long> keep;
  // At least the newest one, whatever max_to_keep says: the checkpoint just written is never doomed.
  const auto keep_newest = static_cast<std::size_t>(std::max(1L, max_to_keep));
  for (std::size_t i = saved.size() > keep_newest ? saved.size() - keep_newest : 0; i < saved.size(); ++i) {
    keep.insert(saved[i].step);
  }
  if (keep_interval_hours > 0) {
    std::int64_t last_kept = 0;
    bool any = false;
    for (const Saved& s : saved) {
      if (!any || static_cast<double>(s.unix_time - last_kept) >= keep_interval_hours * 3600.0) {
        keep.insert(s.step);
        last_kept = s.unix_time;
        any = true;
      }
    }
  }
  std::vector<long> doomed;
  for (const Saved& s : saved) {
    if (!keep.contains(s.step)) doomed.push_back(s.step);
  }
  return doomed;
}

}  // namespace paxocl::checkpoint
