#include "checkpoint/checkpoint_dir.h"

#include <algorithm>
#include <charconv>
#include <set>

#include <fmt/format.h>

namespace paxocl::checkpoint {

namespace fs = std::filesystem;

namespace {
constexpr std::string_view kPrefix = "checkpoint_", kTemporaryPrefix = "tmp.checkpoint_";

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
    if (step_of(entry.path().filename().string(), kTemporaryPrefix) >= 0) {
      fs::remove_all(entry.path(), ec);
      ++removed;
    }
  }
  return removed;
}

std::vector<long> CheckpointDir::to_delete(const std::vector<Saved>& saved, int max_to_keep, double keep_interval_hours) {
  std::set<long> keep;
  for (std::size_t i = saved.size() > static_cast<std::size_t>(std::max(0, max_to_keep))
                           ? saved.size() - static_cast<std::size_t>(max_to_keep)
                           : 0;
       i < saved.size(); ++i) {
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
