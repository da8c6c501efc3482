// Checkpoints on the host: the directory layout and retention, a two-process write + commit read
// back exactly, and every kind of damage (flipped byte, truncation, missing manifest, another
// model) reported as such, with the newest good checkpoint used instead.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <random>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_writer.h"
#include "checkpoint/manifest_file.h"
#include "common/errors.h"
#include "proto/checkpoint.pb.h"
#include "tests/model_configs.h"
#include "tests/test_support.h"

namespace paxocl::checkpoint {
namespace {

namespace fs = std::filesystem;

TEST(CheckpointDir, RetentionKeepsTheNewestAndOnePerInterval) {
  std::vector<CheckpointDir::Saved> saved;
  for (long s = 0; s < 10; ++s) saved.push_back({s * 100, s * 1800});  // every half hour
  EXPECT_EQ(CheckpointDir::to_delete(saved, 3, 0), (std::vector<long>{0, 100, 200, 300, 400, 500, 600}));
  // Also one per 2 hours, counted from the oldest: 0, 400 (2 h), 800 (4 h).
  EXPECT_EQ(CheckpointDir::to_delete(saved, 3, 2.0), (std::vector<long>{100, 200, 300, 500, 600}));
  EXPECT_TRUE(CheckpointDir::to_delete(saved, 10, 0).empty());
  // CHECKPOINT_MAX_TO_KEEP=0 (refused by the experiment; here straight to the policy) still keeps the newest.
  EXPECT_EQ(CheckpointDir::to_delete(saved, 0, 0), (std::vector<long>{0, 100, 200, 300, 400, 500, 600, 700, 800}));
  EXPECT_EQ(CheckpointDir::to_delete(saved, -5, 0).size(), 9u);
}

TEST(CheckpointDir, RemovalIsAtomicAndAnInterruptedReplaceKeepsTheOldCheckpoint) {
  testing::TempDir tmp;
  const CheckpointDir dir(tmp.path());
  fs::create_directories(dir.final_path(4));
  std::ofstream(dir.final_path(4) / "x") << "x";
  dir.remove(4);
  EXPECT_TRUE(dir.steps().empty());
  EXPECT_EQ(std::distance(fs::directory_iterator(tmp.path()), fs::directory_iterator()), 0);
  // publish() cut off after moving the old checkpoint aside: the next start puts it back.
  fs::create_directories(tmp.path() / "replaced.checkpoint_00000009");
  fs::create_directories(dir.temporary_path(9));
  dir.remove_temporaries();
  EXPECT_EQ(dir.steps(), (std::vector<long>{9}));
}

TEST(CheckpointDir, ListsCommittedStepsAndRemovesTemporaries) {
  testing::TempDir tmp;
  const CheckpointDir dir(tmp.path());
  fs::create_directories(dir.final_path(20));
  fs::create_directories(dir.final_path(3));
  fs::create_directories(dir.temporary_path(40));
  fs::create_directories(tmp.path() / "checkpoint_12x");  // not a checkpoint name
  EXPECT_EQ(dir.steps(), (std::vector<long>{3, 20}));
  EXPECT_EQ(dir.final_path(3).filename(), "checkpoint_00000003");
  EXPECT_EQ(dir.remove_temporaries(), 1);
  EXPECT_FALSE(fs::exists(dir.temporary_path(40)));
}

class CheckpointFiles : public ::testing::Test {
 protected:
  CheckpointFiles() : layout_(testing::gpt_config(2, 36, 100, 3, 12, 16, 50), 16), dir_(tmp_.path()) {}

  // The full state of step `step`, written as two processes that own alternate 1000-float slices.
  void save(long step) {
    state_ = std::vector<float>(layout_.total());
    std::mt19937 rng(static_cast<unsigned>(step));
    for (float& x : state_) x = std::uniform_real_distribution<float>(-1, 1)(rng);
    fs::create_directories(dir_.temporary_path(step));
    for (int p = 0; p < 2; ++p) {
      Snapshot s;
      s.step = step;
      s.input_state = "epoch=0,index=" + std::to_string(step);
      s.optimizer_steps_applied = step;
      for (std::size_t at = static_cast<std::size_t>(p) * 1000; at < layout_.total(); at += 2000) {
        const std::size_t n = std::min<std::size_t>(1000, layout_.total() - at);
        std::vector<float> params, m, v;
        for (std::size_t i = at; i < at + n; ++i) {
          params.push_back(state_[i]);
          m.push_back(2 * state_[i]);
          v.push_back(3 * state_[i]);
        }
        s.slices.push_back(StateSlice::of(at, std::move(params), std::move(m), std::move(v)));
      }
      write_process_part(dir_, s, layout_, p);
      if (p == 1) commit(dir_, s, layout_, 2, std::chrono::seconds(5));
    }
  }
  void expect_state(const RestoredState& r, long step) {
    EXPECT_EQ(r.step, step);
    EXPECT_EQ(r.input_state, "epoch=0,index=" + std::to_string(step));
    EXPECT_EQ(r.optimizer_steps_applied, step);
    for (const models::TensorSpec& t : layout_.tensors()) {  // padding is not stored; tensors are
      for (std::size_t i = t.offset; i < t.offset + t.count; ++i) {
        ASSERT_EQ(r.params[i], state_[i]) << t.name;
        ASSERT_EQ(r.m[i], 2 * state_[i]) << t.name;
        ASSERT_EQ(r.v[i], 3 * state_[i]) << t.name;
      }
    }
  }
  fs::path part_file(long step) const { return dir_.final_path(step) / "part-00001.safetensors"; }

  testing::TempDir tmp_;
  models::ParameterLayout layout_;
  CheckpointDir dir_;
  std::vector<float> state_;
};

TEST_F(CheckpointFiles, TwoProcessesPartsReadBackExactly) {
  save(7);
  EXPECT_EQ(dir_.steps(), (std::vector<long>{7}));
  EXPECT_FALSE(fs::exists(dir_.temporary_path(7)));
  expect_state(read_checkpoint(dir_, 7, layout_), 7);
}

TEST_F(CheckpointFiles, DamagedCheckpointsAreReportedAndTheNewestGoodOneIsUsed) {
  save(1);
  const std::vector<float> good = state_;
  save(2);
  {  // flip one byte of the newest
    std::fstream f(part_file(2), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    f.put('\x5a');
  }
  EXPECT_THROW(
      {
        try {
          read_checkpoint(dir_, 2, layout_);
        } catch (const DataError& e) {
          EXPECT_NE(std::string(e.what()).find("CRC32C"), std::string::npos) << e.what();
          EXPECT_NE(std::string(e.what()).find(part_file(2).string()), std::string::npos) << e.what();
          throw;
        }
      },
      DataError);
  std::vector<std::string> skipped;
  auto latest = read_latest_checkpoint(dir_, layout_, [&](const std::string& why) { skipped.push_back(why); });
  ASSERT_TRUE(latest.has_value());
  state_ = good;
  expect_state(*latest, 1);
  ASSERT_EQ(skipped.size(), 1u);

  fs::resize_file(part_file(1), fs::file_size(part_file(1)) - 4);  // truncate the older one too
  skipped.clear();
  EXPECT_FALSE(read_latest_checkpoint(dir_, layout_, [&](const std::string& why) { skipped.push_back(why); }));
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_NE(skipped[1].find("truncated"), std::string::npos) << skipped[1];
}

TEST_F(CheckpointFiles, AMissingManifestOrAnotherModelIsReported) {
  save(3);
  const models::ParameterLayout other(testing::gpt_config(2, 48, 100, 4, 12, 16, 50), 16);
  EXPECT_THROW(read_checkpoint(dir_, 3, other), ConfigError);
  fs::remove(dir_.final_path(3) / CheckpointDir::kManifest);
  EXPECT_THROW(read_checkpoint(dir_, 3, layout_), DataError);
}

// Rewrites the manifest of `step` through `edit`, sealed again (as a crafted checkpoint would be).
template <typename Edit>
void edit_manifest(const CheckpointDir& dir, long step, Edit&& edit) {
  proto::CheckpointManifest m = open_manifest(dir.final_path(step), step);
  edit(m);
  std::ofstream(dir.final_path(step) / CheckpointDir::kManifest, std::ios::binary | std::ios::trunc) << seal_manifest(m);
}

std::string data_error(const std::function<void()>& f) { return testing::error_message<DataError>(f); }

TEST_F(CheckpointFiles, AFlippedBitInTheManifestIsCorruptionAndFallsBack) {
  save(1);
  const std::vector<float> good = state_;
  save(2);
  const fs::path manifest = dir_.final_path(2) / CheckpointDir::kManifest;
  std::string bytes;
  {
    std::ifstream in(manifest, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const std::size_t at = bytes.find("params/h1.mlp.fc.w");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 8] ^= 0x01;  // "h1" -> "h0": the name of another tensor, still a valid protobuf
  std::ofstream(manifest, std::ios::binary | std::ios::trunc) << bytes;
  EXPECT_NE(data_error([&] { read_checkpoint(dir_, 2, layout_); }).find("CRC32C"), std::string::npos);
  std::vector<std::string> skipped;
  const auto latest = read_latest_checkpoint(dir_, layout_, [&](const std::string& why) { skipped.push_back(why); });
  ASSERT_TRUE(latest.has_value());
  state_ = good;
  expect_state(*latest, 1);
  EXPECT_EQ(skipped.size(), 1u);
}

TEST_F(CheckpointFiles, ManifestFileNamesArePlainAndEveryPieceIsInAVerifiedFile) {
  save(2);
  const std::string outside = (tmp_.path() / "outside.safetensors").string();
  fs::copy_file(part_file(2), outside);
  // A listed file outside the directory.
  edit_manifest(dir_, 2, [&](proto::CheckpointManifest& m) {
    m.mutable_files(1)->set_name("../" + part_file(2).filename().string());
  });
  EXPECT_NE(data_error([&] { read_checkpoint(dir_, 2, layout_); }).find("not a plain file name"), std::string::npos);
  save(3);
  // No files listed (so no CRC checks) and pieces naming an absolute path.
  edit_manifest(dir_, 3, [&](proto::CheckpointManifest& m) {
    m.clear_files();
    for (auto& t : *m.mutable_tensors()) {
      for (auto& p : *t.mutable_pieces()) p.set_file(outside);
    }
  });
  EXPECT_NE(data_error([&] { read_checkpoint(dir_, 3, layout_); }).find("not among the checkpoint's verified files"),
            std::string::npos);
  save(4);
  edit_manifest(dir_, 4, [](proto::CheckpointManifest& m) { m.set_step(40); });
  EXPECT_NE(data_error([&] { read_checkpoint(dir_, 4, layout_); }).find("records step 40"), std::string::npos);
}

TEST_F(CheckpointFiles, APieceBeyondItsTensorIsRefusedBeforeAnyCopy) {
  save(2);
  edit_manifest(dir_, 2, [](proto::CheckpointManifest& m) {
    for (auto& t : *m.mutable_tensors()) {
      if (t.name() == "params/lnf.bias") t.mutable_pieces(0)->set_end(1u << 20);
    }
  });
  EXPECT_NE(data_error([&] { read_checkpoint(dir_, 2, layout_); }).find("does not fit"), std::string::npos);
}

TEST_F(CheckpointFiles, ACommitWaitsForEveryProcessAndGivesUp) {
  fs::create_directories(dir_.temporary_path(5));
  Snapshot s;
  s.step = 5;
  s.slices.push_back(StateSlice::of(0, std::vector<float>(layout_.total()), std::vector<float>(layout_.total()),
                                    std::vector<float>(layout_.total())));
  write_process_part(dir_, s, layout_, 0);
  EXPECT_THROW(commit(dir_, s, layout_, 2, std::chrono::seconds(1)), DataError);  // process 1 never wrote
  EXPECT_TRUE(dir_.steps().empty());  // nothing half-done is visible
}

}  // namespace
}  // namespace paxocl::checkpoint
