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
#include "config/experiment.h"
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
  void save(long step, const std::string& experiment_json = "") {
    state_ = std::vector<float>(layout_.total());
    std::mt19937 rng(static_cast<unsigned>(step));
    for (float& x : state_) x = std::uniform_real_distribution<float>(-1, 1)(rng);
    fs::create_directories(dir_.temporary_path(step));
    for (int p = 0; p < 2; ++p) {
      Snapshot s;
      s.step = step;
      s.input_state = "epoch=0,index=" + std::to_string(step);
      s.optimizer_steps_applied = step;
      s.experiment_json = experiment_json;
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
  expect_state(read_checkpoint(dir_, 7, layout_, nullptr), 7);
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
          read_checkpoint(dir_, 2, layout_, nullptr);
        } catch (const DataError& e) {
          EXPECT_NE(std::string(e.what()).find("CRC32C"), std::string::npos) << e.what();
          EXPECT_NE(std::string(e.what()).find(part_file(2).string()), std::string::npos) << e.what();
          throw;
        }
      },
      DataError);
  std::vector<std::string> skipped;
  auto latest = read_latest_checkpoint(dir_, layout_, nullptr, [&](const std::string& why) { skipped.push_back(why); });
  ASSERT_TRUE(latest.has_value());
  state_ = good;
  expect_state(*latest, 1);
  ASSERT_EQ(skipped.size(), 1u);

  fs::resize_file(part_file(1), fs::file_size(part_file(1)) - 4);  // truncate the older one too
  skipped.clear();
  EXPECT_FALSE(read_latest_checkpoint(dir_, layout_, nullptr, [&](const std::string& why) { skipped.push_back(why); }));
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_NE(skipped[1].find("truncated"), std::string::npos) << skipped[1];
}

TEST_F(CheckpointFiles, AMissingManifestOrAnotherModelIsReported) {
  save(3);
  const models::ParameterLayout other(testing::gpt_config(2, 48, 100, 4, 12, 16, 50), 16);
  EXPECT_THROW(read_checkpoint(dir_, 3, other, nullptr), ConfigError);
  fs::remove(dir_.final_path(3) / CheckpointDir::kManifest);
  EXPECT_THROW(read_checkpoint(dir_, 3, layout_, nullptr), DataError);
}

std::string config_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError";
  return "";
}

TEST_F(CheckpointFiles, ATensorTheLayoutLacksIsAnotherModel) {
  save(3);  // 2 layers; a 1-layer model's tensors all fit, with the same shapes
  const models::ParameterLayout fewer(testing::gpt_config(1, 36, 100, 3, 12, 16, 50), 16);
  const std::string why = config_error([&] { read_checkpoint(dir_, 3, fewer, nullptr); });
  EXPECT_NE(why.find("holds a tensor params/h1."), std::string::npos) << why;
  EXPECT_NE(why.find("use another --job_log_dir"), std::string::npos) << why;
}

// The fixture's model (gpt_config(2, 36, 100, 3, 12, 16, 50)) as an experiment records it.
config::Experiment fixture_experiment() {
  config::Experiment e = config::Experiment::named("Default");
  for (const auto& [field, value] : std::vector<std::pair<std::string, std::string>>{
           {"NUM_LAYERS", "2"}, {"MODEL_DIMS", "36"}, {"HIDDEN_DIMS", "100"}, {"NUM_HEADS", "3"},
           {"DIMS_PER_HEAD", "12"}, {"MAX_SEQ_LEN", "16"}, {"VOCAB_SIZE", "50"}}) {
    e.set(field, value);
  }
  return e;
}

TEST_F(CheckpointFiles, TheRecordedExperimentMustDefineTheSameModel) {
  const config::Experiment saved = fixture_experiment();
  save(3, saved.to_json().dump());
  // Settings that do not define the model may change between runs of a job.
  config::Experiment same = saved;
  same.set("LEARNING_RATE", "0.5");
  same.set("PERCORE_BATCH_SIZE", "2");
  same.set("MAX_STEPS", "7");
  same.set("INIT_STD", "0.5");
  expect_state(read_checkpoint(dir_, 3, layout_, &same), 3);

  // Same shapes, another model: 6 heads of 6 for 3 of 12, VOCAB_SIZE 60 pads to the same 128 rows.
  config::Experiment heads = saved;
  heads.set("NUM_HEADS", "6");
  heads.set("DIMS_PER_HEAD", "6");
  std::string why = config_error([&] { read_checkpoint(dir_, 3, layout_, &heads); });
  EXPECT_NE(why.find("saved for another model: NUM_HEADS 3 (saved) vs 6 (requested), DIMS_PER_HEAD 12 vs 6"),
            std::string::npos) << why;
  config::Experiment vocab = saved;
  vocab.set("VOCAB_SIZE", "60");
  why = config_error([&] { read_checkpoint(dir_, 3, layout_, &vocab); });
  EXPECT_NE(why.find("VOCAB_SIZE 50 (saved) vs 60 (requested)"), std::string::npos) << why;
  config::Experiment tokenizer = saved;
  tokenizer.set("TOKENIZER", "other.model");
  why = config_error([&] { read_checkpoint(dir_, 3, layout_, &tokenizer); });
  EXPECT_NE(why.find("TOKENIZER \"\" (saved) vs \"other.model\" (requested)"), std::string::npos) << why;
  // Another family is named as such (its own settings differ too, listed after it).
  config::Experiment llama = saved;
  llama.set("ARCHITECTURE", "llama");
  why = config_error([&] { read_checkpoint(dir_, 3, layout_, &llama); });
  EXPECT_NE(why.find("ARCHITECTURE gpt (saved) vs llama (requested)"), std::string::npos) << why;
  // read_latest_checkpoint does not fall back past it to an older checkpoint.
  EXPECT_THROW(read_latest_checkpoint(dir_, layout_, &heads, [](const std::string&) {}), ConfigError);
}

TEST_F(CheckpointFiles, LlamaSettingsThatKeepTheShapesStillDefineTheModel) {
  config::Experiment saved = fixture_experiment();
  saved.set("ARCHITECTURE", "llama");
  const models::ParameterLayout layout(saved.model_config(), 16);
  // The fixture's save() writes layout_'s tensors; this test reads the manifest's settings only,
  // which are compared before any tensor.
  save(4, saved.to_json().dump());
  config::Experiment rope = saved;
  rope.set("ROPE_BASE", "500000");
  rope.set("NORM_EPSILON", "0.1");
  const std::string why = config_error([&] { read_checkpoint(dir_, 4, layout, &rope); });
  EXPECT_NE(why.find("ROPE_BASE 10000 (saved) vs 500000 (requested), NORM_EPSILON 1e-05 vs 0.1"), std::string::npos)
      << why;
  // NUM_KV_HEADS 0 means one per query head: the same model as NUM_KV_HEADS=NUM_HEADS.
  config::Experiment kv = saved;
  kv.set("NUM_KV_HEADS", "3");
  // (The settings agree; the fixture's GPT tensors are what differ.)
  const std::string tensors = config_error([&] { read_checkpoint(dir_, 4, layout, &kv); });
  EXPECT_EQ(tensors.find("saved for another model:"), std::string::npos) << tensors;
  EXPECT_NE(tensors.find("params/"), std::string::npos) << tensors;
}

TEST_F(CheckpointFiles, AManifestWithoutAnExperimentIsNotGuessedAt) {
  save(5);
  const config::Experiment requested = fixture_experiment();
  const std::string why = config_error([&] { read_checkpoint(dir_, 5, layout_, &requested); });
  EXPECT_NE(why.find("records no experiment"), std::string::npos) << why;
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
  EXPECT_NE(data_error([&] { read_checkpoint(dir_, 2, layout_, nullptr); }).find("CRC32C"), std::string::npos);
  std::vector<std::string> skipped;
  const auto latest = read_latest_checkpoint(dir_, layout_, nullptr, [&](const std::string& why) { skipped.push_back(why); });
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
  EXPECT_NE(data_error([&] { read_checkpoint(dir_, 2, layout_, nullptr); }).find("not a plain file name"), std::string::npos);
  save(3);
  // No files listed (so no CRC checks) and pieces naming an absolute path.
  edit_manifest(dir_, 3, [&](proto::CheckpointManifest& m) {
    m.clear_files();
    for (auto& t : *m.mutable_tensors()) {
      for (auto& p : *t.mutable_pieces()) p.set_file(outside);
    }
  });
  EXPECT_NE(data_error([&] { read_checkpoint(dir_, 3, layout_, nullptr); }).find("not among the checkpoint's verified files"),
            std::string::npos);
  save(4);
  edit_manifest(dir_, 4, [](proto::CheckpointManifest& m) { m.set_step(40); });
  EXPECT_NE(data_error([&] { read_checkpoint(dir_, 4, layout_, nullptr); }).find("records step 40"), std::string::npos);
}

TEST_F(CheckpointFiles, APieceBeyondItsTensorIsRefusedBeforeAnyCopy) {
  save(2);
  edit_manifest(dir_, 2, [](proto::CheckpointManifest& m) {
    for (auto& t : *m.mutable_tensors()) {
      if (t.name() == "params/lnf.bias") t.mutable_pieces(0)->set_end(1u << 20);
    }
  });
  EXPECT_NE(data_error([&] { read_checkpoint(dir_, 2, layout_, nullptr); }).find("does not fit"), std::string::npos);
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
