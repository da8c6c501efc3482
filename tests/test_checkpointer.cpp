// The Checkpointer's policy around damaged checkpoints, as one process and under mpirun:
//   - after falling back past a corrupt newest checkpoint, saving continues from the restored step
//     (periodic, final and preemption saves are not skipped) and the corrupt one is moved aside;
//   - a save of a step whose directory already exists replaces it with the new, good checkpoint;
//   - every process resumes at the same step even when the newest checkpoint reads back on some
//     processes only (each rank here has its own directory, and only the last rank's is damaged).
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_writer.h"
#include "checkpoint/checkpointer.h"
#include "tests/model_configs.h"
#include "tests/mpi_test_main.h"
#include "tests/test_support.h"

namespace paxocl::checkpoint {
namespace {

namespace fs = std::filesystem;
using testing::test_world;

class CheckpointerPolicy : public ::testing::Test {
 protected:
  CheckpointerPolicy() : layout_(testing::gpt_config(2, 36, 100, 3, 12, 16, 50), 16) {
    // One directory for the whole job: rank 0's temporary directory, shared by name.
    shared_ = fs::path(test_world().all_gather(own_.path().string()).front());
  }
  // Rank 0 deletes the shared directory with its TempDir: only once every rank is done with it.
  ~CheckpointerPolicy() override { test_world().barrier(); }

  // This process's share of a state derived from `step`: alternate 1000-float slices per rank.
  Snapshot snapshot(long step) const {
    const auto& world = test_world();
    std::mt19937 rng(static_cast<unsigned>(step));
    std::vector<float> state(layout_.total());
    for (float& x : state) x = std::uniform_real_distribution<float>(-1, 1)(rng);
    Snapshot s;
    s.input_state = "epoch=0,index=" + std::to_string(step);
    for (std::size_t at = static_cast<std::size_t>(world.rank()) * 1000; at < layout_.total();
         at += 1000 * static_cast<std::size_t>(world.size())) {
      const std::size_t n = std::min<std::size_t>(1000, layout_.total() - at);
      std::vector<float> values(state.begin() + static_cast<std::ptrdiff_t>(at), state.begin() + static_cast<std::ptrdiff_t>(at + n));
      s.slices.push_back(StateSlice::of(at, values, values, values));
    }
    return s;
  }
  static CheckpointPolicy every(long n) { return {n, 10, 0.0, true, false}; }

  testing::TempDir own_;
  fs::path shared_;
  models::ParameterLayout layout_;
};

void flip_a_byte(const fs::path& file) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(300);
  const char c = static_cast<char>(f.get());
  f.seekp(300);
  f.put(static_cast<char>(c ^ 0x40));
}

TEST_F(CheckpointerPolicy, AfterFallingBackPastACorruptCheckpointSavingGoesOnFromTheRestoredStep) {
  const auto& world = test_world();
  const CheckpointDir dir(shared_ / "checkpoints");
  {
    Checkpointer first(dir.root(), world, every(5), layout_, nullptr);
    EXPECT_FALSE(first.restore().has_value());
    ASSERT_TRUE(first.due(0));
    first.save(0, [&] { return snapshot(0); });
    ASSERT_TRUE(first.due(5));
    first.save(5, [&] { return snapshot(5); });
    first.wait();
  }
  world.barrier();
  if (world.rank() == 0) flip_a_byte(dir.final_path(5) / "part-00000.safetensors");
  world.barrier();

  Checkpointer again(dir.root(), world, every(5), layout_, nullptr);
  const std::optional<RestoredState> restored = again.restore();
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(restored->step, 0);
  EXPECT_EQ(again.last_saved_step(), 0);
  EXPECT_TRUE(fs::exists(dir.root() / "corrupt.checkpoint_00000005"));  // kept for inspection, not listed
  EXPECT_EQ(dir.steps(), (std::vector<long>{0}));
  EXPECT_TRUE(again.due(5)) << "the periodic save of step 5 must not be skipped";
  again.save(5, [&] { return snapshot(5); });
  again.wait();
  world.barrier();
  EXPECT_EQ(read_checkpoint(dir, 5, layout_, nullptr).input_state, "epoch=0,index=5");
}

TEST_F(CheckpointerPolicy, ASaveReplacesADirectoryOfTheSameStep) {
  const auto& world = test_world();
  const CheckpointDir dir(shared_ / "checkpoints");
  Checkpointer checkpoints(dir.root(), world, every(0), layout_, nullptr);
  EXPECT_FALSE(checkpoints.restore().has_value());
  if (world.rank() == 0) {  // a damaged checkpoint of step 7 appears (e.g. left by another writer)
    fs::create_directories(dir.final_path(7));
    std::ofstream(dir.final_path(7) / CheckpointDir::kManifest) << "garbage";
  }
  world.barrier();
  checkpoints.save(7, [&] { return snapshot(7); });
  checkpoints.wait();
  world.barrier();
  EXPECT_EQ(read_checkpoint(dir, 7, layout_, nullptr).input_state, "epoch=0,index=7");
  EXPECT_EQ(dir.steps(), (std::vector<long>{7}));
}

TEST_F(CheckpointerPolicy, EveryProcessResumesAtTheSameStep) {
  const auto& world = test_world();
  // Each rank's own directory holds the same two checkpoints, written as a job of one process.
  const CheckpointDir dir(own_.path() / "checkpoints");
  fs::create_directories(dir.root());
  for (long step : {3L, 6L}) {
    Snapshot s;
    s.step = step;
    s.input_state = "epoch=0,index=" + std::to_string(step);
    s.slices.push_back(StateSlice::of(0, std::vector<float>(layout_.total(), 1.0f), std::vector<float>(layout_.total(), 2.0f),
                                      std::vector<float>(layout_.total(), 3.0f)));
    fs::create_directories(dir.temporary_path(step));
    write_process_part(dir, s, layout_, 0);
    commit(dir, s, layout_, 1, std::chrono::seconds(5));
  }
  const bool damaged_here = world.rank() == world.size() - 1;  // the newest reads back everywhere else
  if (damaged_here) flip_a_byte(dir.final_path(6) / "part-00000.safetensors");
  Checkpointer checkpoints(dir.root(), world, every(3), layout_, nullptr);
  const std::optional<RestoredState> restored = checkpoints.restore();
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(restored->step, 3) << "rank " << world.rank() << " resumed at another step than the damaged rank";
}

}  // namespace
}  // namespace paxocl::checkpoint
