#include "checkpoint/checkpointer.h"

#include <algorithm>
#include <chrono>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_writer.h"
#include "common/errors.h"

namespace paxocl::checkpoint {

namespace fs = std::filesystem;

Checkpointer::Checkpointer(fs::path root, const collectives::ProcessWorld& world, CheckpointPolicy policy,
                           const models::ParameterLayout& layout, const config::Experiment* experiment)
    : dir_(std::move(root)), world_(world), policy_(policy), layout_(layout), experiment_(experiment) {
  if (world_.rank() == 0) {
    std::error_code ec;
    fs::create_directories(dir_.root(), ec);
    if (ec) throw ConfigError(fmt::format("cannot create {}: {}", dir_.root().string(), ec.message()));
    if (const int n = dir_.remove_temporaries(); n > 0) {
      spdlog::warn("removed {} incomplete checkpoint(s) left in {} by an interrupted save", n, dir_.root().string());
    }
  }
  world_.barrier();
}

Checkpointer::~Checkpointer() {
  try {
    wait();
  } catch (const std::exception& e) {
    spdlog::error("checkpoint write failed: {}", e.what());
  }
}

std::optional<RestoredState> Checkpointer::restore() {
  // Every process walks rank 0's list from the newest and takes a checkpoint only when all of them
  // read it whole: a read error on one process must not resume it at another step than the rest.
  std::vector<long> steps = dir_.steps();
  if (world_.size() > 1) {
    const std::string listed = world_.all_gather(fmt::format("{}", fmt::join(steps, " "))).front();
    steps.clear();
    std::istringstream in(listed);
    for (long step = 0; in >> step;) steps.push_back(step);
  }
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    enum Outcome : int { kRead = 0, kUnreadable = 1, kOtherModel = 2 };
    std::optional<RestoredState> state;
    int outcome = kRead;
    std::string why;
    try {
      state = read_checkpoint(dir_, *it, layout_, experiment_);
    } catch (const ConfigError& e) {  // saved for another model: a user error, not a fallback
      outcome = kOtherModel;
      why = e.what();
    } catch (const DataError& e) {  // corrupt or truncated (weight-file errors included)
      outcome = kUnreadable;
      why = e.what();
    }
    const std::vector<int> outcomes = world_.size() > 1 ? world_.all_gather(outcome) : std::vector<int>{outcome};
    const int worst = *std::max_element(outcomes.begin(), outcomes.end());
    if (worst == kRead) {
      last_saved_ = *it;
      return state;
    }
    if (worst == kOtherModel) {
      throw ConfigError(why.empty() ? fmt::format("{} was saved for another model; use another --job_log_dir",
                                                  dir_.final_path(*it).string())
                                    : why);
    }
    const long failed = std::count(outcomes.begin(), outcomes.end(), static_cast<int>(kUnreadable));
    if (!why.empty()) spdlog::warn("checkpoint of step {} does not read back whole: {}", *it, why);
    if (world_.rank() == 0) {
      const fs::path aside = dir_.move_aside(*it);
      spdlog::warn("skipping the checkpoint of step {} (unreadable on {} of {} process(es)); moved it to {} for "
                   "inspection (delete it when done)",
                   *it, failed, world_.size(), aside.string());
    }
    world_.barrier();  // every process sees it gone before going on (e.g. to save that step again)
  }
  return std::nullopt;
}

bool Checkpointer::due(long step) const {
  if (!policy_.enabled || step <= last_saved_) return false;
  return last_saved_ < 0 || (policy_.every_n_steps > 0 && step % policy_.every_n_steps == 0);
}

void Checkpointer::wait() {
  if (writer_.joinable()) writer_.join();
  std::lock_guard lock(mutex_);
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void Checkpointer::save(long step, const std::function<Snapshot()>& take_snapshot) {
  using Ms = std::chrono::duration<double, std::milli>;
  const auto start = std::chrono::steady_clock::now();
  wait();  // at most one write in flight
  wait_ms_ = Ms(std::chrono::steady_clock::now() - start).count();
  if (world_.rank() == 0) {
    std::error_code ec;
    fs::remove_all(dir_.temporary_path(step), ec);
    fs::create_directories(dir_.temporary_path(step), ec);
    if (ec) throw DataError(fmt::format("cannot create {}: {}", dir_.temporary_path(step).string(), ec.message()));
  }
  world_.barrier();  // the directory exists before any process writes into it
  const auto snapshot_start = std::chrono::steady_clock::now();
  Snapshot snapshot = take_snapshot();
  snapshot_ms_ = Ms(std::chrono::steady_clock::now() - snapshot_start).count();
  snapshot.step = step;
  last_saved_ = step;
  if (policy_.async) {
    writer_ = std::thread([this, snapshot = std::move(snapshot)]() mutable {
      try {
        write(std::move(snapshot));
      } catch (...) {
        std::lock_guard lock(mutex_);
        error_ = std::current_exception();
      }
    });
  } else {
    write(std::move(snapshot));
  }
  blocking_ms_ = Ms(std::chrono::steady_clock::now() - start).count();
}

void Checkpointer::write(Snapshot snapshot) {
  const auto start = std::chrono::steady_clock::now();
  write_process_part(dir_, snapshot, layout_, world_.rank());
  if (world_.rank() != 0) return;
  commit(dir_, snapshot, layout_, world_.size(), std::chrono::seconds(600));
  spdlog::info("checkpoint {} saved ({:.0f} ms)", dir_.final_path(snapshot.step).string(),
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  std::vector<CheckpointDir::Saved> saved;
  for (long s : dir_.steps()) {
    try {
      const ManifestSummary m = read_manifest_summary(dir_, s);
      saved.push_back({s, m.unix_time});
    } catch (const DataError&) {  // unreadable: retention leaves it to the restore's judgement
    }
  }
  for (long s : CheckpointDir::to_delete(saved, policy_.max_to_keep, policy_.keep_interval_hours)) {
    try {
      dir_.remove(s);
    } catch (const DataError& e) {  // the new checkpoint is committed; an old one lingers
      spdlog::warn("retention: {}", e.what());
    }
  }
}

}  // namespace paxocl::checkpoint
