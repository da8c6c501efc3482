#include "checkpoint/checkpointer.h"

#include <chrono>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_writer.h"
#include "device/errors.h"

namespace paxocl::checkpoint {

namespace fs = std::filesystem;

Checkpointer::Checkpointer(fs::path root, const collectives::ProcessWorld& world, CheckpointPolicy policy,
                           const models::ParameterLayout& layout)
    : dir_(std::move(root)), world_(world), policy_(policy), layout_(layout) {
  if (world_.rank() == 0) {
    std::error_code ec;
    fs::create_directories(dir_.root(), ec);
    if (ec) throw ConfigError(fmt::format("cannot create {}: {}", dir_.root().string(), ec.message()));
    if (const int n = dir_.remove_temporaries(); n > 0) {
      spdlog::warn("removed {} incomplete checkpoint(s) left in {} by an interrupted save", n, dir_.root().string());
    }
  }
  world_.barrier();
  const std::vector<long> steps = dir_.steps();
  if (!steps.empty()) last_saved_ = steps.back();
}

Checkpointer::~Checkpointer() {
  try {
    wait();
  } catch (const std::exception& e) {
    spdlog::error("checkpoint write failed: {}", e.what());
  }
}

std::optional<RestoredState> Checkpointer::restore() {
  return read_latest_checkpoint(dir_, layout_, [](const std::string& why) {
    spdlog::warn("skipping a checkpoint that does not read back whole: {}", why);
  });
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
  const auto start = std::chrono::steady_clock::now();
  wait();  // at most one write in flight
  if (world_.rank() == 0) {
    std::error_code ec;
    fs::remove_all(dir_.temporary_path(step), ec);
    fs::create_directories(dir_.temporary_path(step), ec);
    if (ec) throw DataError(fmt::format("cannot create {}: {}", dir_.temporary_path(step).string(), ec.message()));
  }
  world_.barrier();  // the directory exists before any process writes into it
  Snapshot snapshot = take_snapshot();
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
  blocking_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
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
    std::error_code ec;
    fs::remove_all(dir_.final_path(s), ec);
  }
}

}  // namespace paxocl::checkpoint
