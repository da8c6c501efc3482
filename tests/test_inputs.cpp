// The input pipeline: sharding across simulated hosts, evaluation passes, resume exactness,
// prefetching, token shards and their failure modes, SentencePiece, corpora and prepared datasets.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include "device/errors.h"
#include "inputs/corpus.h"
#include "inputs/dataset.h"
#include "inputs/prefetch_input.h"
#include "inputs/token_shard.h"
#include "inputs/tokenizer.h"
#include "inputs/windowed_input.h"
#include "common/rng.h"
#include "tests/test_support.h"

namespace paxocl::inputs {
namespace {

using paxocl::testing::run_command;
using paxocl::testing::TempDir;

constexpr int kT = 4;

// A stream whose token i is i: the first id of a row names its window (first id / T).
TokenStream counting_stream(std::size_t n) {
  std::vector<std::uint32_t> tokens(n);
  for (std::size_t i = 0; i < n; ++i) tokens[i] = static_cast<std::uint32_t>(i);
  return TokenStream::from_tokens(std::move(tokens));
}

InputParams params(int batch, int hosts, int host, bool training) {
  InputParams p;
  p.seq_len = kT;
  p.batch_size = batch;
  p.num_infeed_hosts = hosts;
  p.infeed_host_index = host;
  p.is_training = training;
  p.seed = 7;
  p.prefetch_depth = 0;
  return p;
}

// Windows of a batch's rows with weight 1 (first id / T), and the count of padded rows.
std::pair<std::vector<int>, int> windows_of(const Batch& b) {
  std::vector<int> windows;
  int padded = 0;
  for (int r = 0; r < b.batch; ++r) {
    const std::size_t at = static_cast<std::size_t>(r * b.seq_len);
    if (b.weights[at] == 0.0f) {
      ++padded;
      for (int t = 0; t < b.seq_len; ++t) EXPECT_EQ(b.weights[at + static_cast<std::size_t>(t)], 0.0f);
      continue;
    }
    windows.push_back(b.ids[at] / b.seq_len);
    for (int t = 0; t < b.seq_len; ++t) {  // ids and targets are consecutive tokens of the window
      EXPECT_EQ(b.ids[at + static_cast<std::size_t>(t)], b.ids[at] + t);
      EXPECT_EQ(b.targets[at + static_cast<std::size_t>(t)], b.ids[at] + t + 1);
    }
  }
  return {windows, padded};
}

TEST(WindowedInput, TrainingHostsNeverShareAWindowAndAnEpochCoversEachOnce) {
  const std::size_t tokens = 401;  // W = 100 windows of T + 1 = 5 tokens
  for (int hosts : {1, 2, 4}) {
    std::vector<std::unique_ptr<WindowedInput>> inputs;
    for (int h = 0; h < hosts; ++h) inputs.push_back(std::make_unique<WindowedInput>(counting_stream(tokens), params(3, hosts, h, true)));
    const std::size_t steps = inputs[0]->batches_per_epoch();  // floor(100 / (3 * hosts))
    EXPECT_EQ(steps, 100u / (3u * static_cast<std::size_t>(hosts)));
    std::multiset<int> epoch;
    for (std::size_t k = 0; k < steps; ++k) {
      std::set<int> step;
      for (auto& in : inputs) {
        for (int w : windows_of(*in->get_next()).first) {
          EXPECT_TRUE(step.insert(w).second) << hosts << " hosts, step " << k << ": window " << w << " twice";
          epoch.insert(w);
        }
      }
    }
    EXPECT_EQ(epoch.size(), steps * 3 * static_cast<std::size_t>(hosts));
    EXPECT_EQ(std::set<int>(epoch.begin(), epoch.end()).size(), epoch.size()) << "a window repeated within an epoch";
    EXPECT_EQ(inputs[0]->state(), (InputState{1, 0})) << "the epoch rolls over";
    // The next epoch is a different order.
    const auto first_next = windows_of(*inputs[0]->get_next()).first;
    auto again = std::make_unique<WindowedInput>(counting_stream(tokens), params(3, hosts, 0, true));
    EXPECT_NE(windows_of(*again->get_next()).first, first_next);
  }
}

TEST(WindowedInput, EvaluationSeesEveryTokenOnceAndPadsTheLastBatch) {
  const std::size_t tokens = 4 * 10 + 1;  // 10 windows
  for (int hosts : {1, 2, 4}) {
    std::multiset<int> seen;
    std::size_t batches_per_host = 0;
    int padded_rows = 0;
    for (int h = 0; h < hosts; ++h) {
      WindowedInput in(counting_stream(tokens), params(3, hosts, h, false));
      std::size_t n = 0;
      while (auto b = in.get_next()) {
        auto [windows, padded] = windows_of(*b);
        seen.insert(windows.begin(), windows.end());
        padded_rows += padded;
        ++n;
      }
      EXPECT_FALSE(in.get_next().has_value()) << "a finished pass stays finished";
      if (h == 0) batches_per_host = n;
      EXPECT_EQ(n, batches_per_host) << "every host runs the same number of batches";
      in.reset();  // reset_for_eval starts a new pass
      EXPECT_TRUE(in.get_next().has_value());
    }
    EXPECT_EQ(seen, (std::multiset<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})) << hosts << " hosts";
    EXPECT_EQ(padded_rows, static_cast<int>(batches_per_host) * 3 * hosts - 10);
  }
}

TEST(WindowedInput, EvalLoopNumBatchesLimitsThePass) {
  InputParams p = params(2, 1, 0, false);
  p.eval_loop_num_batches = 2;
  WindowedInput in(counting_stream(4 * 10 + 1), p);
  EXPECT_TRUE(in.get_next());
  EXPECT_TRUE(in.get_next());
  EXPECT_FALSE(in.get_next());
}

void expect_resume_exact(const std::function<std::unique_ptr<BaseInput>()>& make) {
  auto original = make();
  for (int i = 0; i < 7; ++i) original->get_next();
  const InputState saved = original->state();
  std::vector<Batch> expected;
  for (int i = 0; i < 30; ++i) expected.push_back(*original->get_next());  // crosses epochs
  auto resumed = make();
  resumed->restore(InputState::parse(saved.to_string()));
  for (const Batch& b : expected) {
    const Batch got = *resumed->get_next();
    ASSERT_EQ(got.ids, b.ids);
    ASSERT_EQ(got.targets, b.targets);
    ASSERT_EQ(got.weights, b.weights);
  }
}

TEST(WindowedInput, RestoredStateYieldsExactlyTheSameBatches) {
  expect_resume_exact([] { return std::make_unique<WindowedInput>(counting_stream(201), params(2, 2, 1, true)); });
}

TEST(PrefetchInput, SameBatchesAndExactResumeThroughTheThread) {
  auto make_plain = [] { return std::make_unique<WindowedInput>(counting_stream(201), params(2, 1, 0, true)); };
  PrefetchInput prefetched(make_plain(), 3);
  auto plain = make_plain();
  for (int i = 0; i < 40; ++i) EXPECT_EQ(prefetched.get_next()->ids, plain->get_next()->ids);
  EXPECT_EQ(prefetched.state(), plain->state()) << "state counts consumed batches, not prefetched ones";
  expect_resume_exact([&] { return std::make_unique<PrefetchInput>(make_plain(), 4); });
}

TEST(PrefetchInput, EndOfPassAndErrorsReachTheCaller) {
  PrefetchInput eval(std::make_unique<WindowedInput>(counting_stream(4 * 3 + 1), params(3, 1, 0, false)), 2);
  EXPECT_TRUE(eval.get_next());
  EXPECT_FALSE(eval.get_next());
  EXPECT_FALSE(eval.get_next());
  eval.reset();
  EXPECT_TRUE(eval.get_next());

  struct Failing : BaseInput {
    std::optional<Batch> get_next() override { throw DataError("disk on fire"); }
    void reset() override {}
    InputState state() const override { return {}; }
    void restore(const InputState&) override {}
  };
  PrefetchInput failing(std::make_unique<Failing>(), 2);
  EXPECT_THROW(failing.get_next(), DataError);
  EXPECT_THROW(failing.get_next(), DataError);
}

TEST(InputParams, PerHostBatchFromFractionalPercoreBatch) {
  EXPECT_EQ(per_host_batch_size(4, 8, 2), 16);
  EXPECT_EQ(per_host_batch_size(0.5, 8, 2), 2);  // tensor parallelism: half a sequence per device
  try {
    per_host_batch_size(0.5, 3, 1);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("global batch 1.5 is not a whole number of sequences per host"), std::string::npos) << e.what();
  }
  EXPECT_THROW(per_host_batch_size(3, 2, 4), ConfigError);  // 6 sequences over 4 hosts
  EXPECT_THROW(InputState::parse("epoch=1"), DataError);
}

// ---- token shards --------------------------------------------------------------------------

template <typename F>
std::string error_of(F&& f) {
  return paxocl::testing::error_message<DataError>(std::forward<F>(f));
}

TEST(TokenShard, RoundTripInBothWidthsAcrossShards) {
  TempDir dir;
  const std::vector<std::uint32_t> a = {1, 2, 3, 65535}, b = {70000, 5};
  write_token_shard(dir.path() / "a.tokens", a, 65536);   // uint16
  write_token_shard(dir.path() / "b.tokens", b, 100000);  // uint32
  EXPECT_EQ(std::filesystem::file_size(dir.path() / "a.tokens"), kShardHeaderBytes + 4 * 2);
  EXPECT_EQ(std::filesystem::file_size(dir.path() / "b.tokens"), kShardHeaderBytes + 2 * 4);
  const TokenStream s = TokenStream::from_shards(expand_shard_spec((dir.path() / "*.tokens").string()), 100000);
  ASSERT_EQ(s.size(), 6u);
  std::vector<int> out;
  s.copy_window(2, 4, out);  // crosses the shard boundary
  EXPECT_EQ(out, (std::vector<int>{3, 65535, 70000, 5}));
}

TEST(TokenShard, BadShardsAreClearDataErrors) {
  TempDir dir;
  const auto f = dir.path() / "x.tokens";
  auto write_bytes = [&](const std::string& bytes) { std::ofstream(f, std::ios::binary) << bytes; };
  EXPECT_NE(error_of([&] { TokenShard(dir.path() / "missing.tokens", 0); }).find("cannot open"), std::string::npos);
  write_bytes("");
  EXPECT_NE(error_of([&] { TokenShard(f, 0); }).find("empty file"), std::string::npos);
  write_token_shard(f, std::vector<std::uint32_t>{1, 2, 3}, 100);
  std::filesystem::resize_file(f, kShardHeaderBytes + 3);
  EXPECT_NE(error_of([&] { TokenShard(f, 0); }).find("truncated"), std::string::npos);
  write_token_shard(f, std::vector<std::uint32_t>{1, 2, 3}, 100);
  {
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    io.write("NOTATOKN", 8);
  }
  EXPECT_NE(error_of([&] { TokenShard(f, 0); }).find("bad magic"), std::string::npos);
  write_token_shard(f, std::vector<std::uint32_t>{1, 2, 3}, 100);
  {
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(8);
    const std::uint32_t v = 9;
    io.write(reinterpret_cast<const char*>(&v), 4);
  }
  EXPECT_NE(error_of([&] { TokenShard(f, 0); }).find("format version 9 is not supported"), std::string::npos);
  write_token_shard(f, std::vector<std::uint32_t>{1, 2, 300}, 1000);
  EXPECT_NE(error_of([&] { TokenShard(f, 256); }).find("token 300 at position 2 is >= VOCAB_SIZE=256"), std::string::npos);
  EXPECT_NE(error_of([&] { expand_shard_spec((dir.path() / "nothing-*.tokens").string()); }).find("no such file"),
            std::string::npos);
}

// ---- SentencePiece, corpora, datasets ------------------------------------------------------

std::filesystem::path write_text(const std::filesystem::path& dir) { return paxocl::testing::write_word_story(dir, 40, 3); }

TEST(Tokenizer, TrainedModelRoundTripsAndMatchesTheStandardTools) {
  TempDir dir;
  const auto text = write_text(dir.path());
  train_tokenizer(text, dir.path() / "m", 100, "bpe");
  const Tokenizer tok(dir.path() / "m.model");
  EXPECT_EQ(tok.vocab_size(), 100);
  const std::string sentence = "the lazy dog jumps over the quick brown fox.";
  const std::vector<int> ids = tok.encode(sentence);
  EXPECT_EQ(tok.decode(ids), sentence);  // already normalised text comes back unchanged
  EXPECT_EQ(tok.decode(tok.encode("  the   fox  ")), "the fox");  // whitespace is normalised
  const auto r = run_command("echo '" + sentence + "' | spm_encode --model=" + (dir.path() / "m.model").string() +
                             " --output_format=id");
  if (r.exit_code == 127) GTEST_SKIP() << "spm_encode is not installed (Debian package sentencepiece)";
  std::string expected;
  for (std::size_t i = 0; i < ids.size(); ++i) expected += (i ? " " : "") + std::to_string(ids[i]);
  EXPECT_EQ(r.out, expected + "\n");
}

TEST(Tokenizer, BadModelsAndTrainingFailuresAreDataErrors) {
  TempDir dir;
  EXPECT_NE(error_of([&] { Tokenizer(dir.path() / "none.model"); }).find("no such file"), std::string::npos);
  std::ofstream(dir.path() / "junk.model") << "not a model";
  EXPECT_NE(error_of([&] { Tokenizer(dir.path() / "junk.model"); }).find("not a SentencePiece model"), std::string::npos);
  const auto text = write_text(dir.path());
  EXPECT_NE(error_of([&] { train_tokenizer(text, dir.path() / "big", 100000, "bpe"); }).find("SentencePiece training"),
            std::string::npos);
}

TEST(Corpus, TextFilesSplitIntoWholeDocuments) {
  TempDir dir;
  const Corpus c = read_text_files({write_text(dir.path())}, 0.1);
  EXPECT_EQ(c.train.size() + c.validation.size(), 40u);
  EXPECT_EQ(c.validation.size(), 4u);
  EXPECT_NE(error_of([&] { read_text_files({dir.path() / "missing.txt"}, 0.1); }).find("cannot be read"), std::string::npos);
}

TEST(Corpus, KjvHasEveryBookWithWholeBooksHeldOut) {
  const auto probe = run_command("command -v bible");
  if (probe.exit_code != 0) GTEST_SKIP() << "the bible program (Debian package bible-kjv) is not installed";
  const Corpus c = read_kjv();
  EXPECT_EQ(c.train.size() + c.validation.size(), 66u);
  EXPECT_EQ(c.validation.size(), kjv_validation_books().size());
  EXPECT_EQ(c.train.front().name, "Ge");
  EXPECT_EQ(c.train.front().text.rfind("In the beginning God created the heaven and the earth.\n", 0), 0u);
  for (const Document& d : c.validation) {
    EXPECT_NE(std::find(kjv_validation_books().begin(), kjv_validation_books().end(), d.name), kjv_validation_books().end());
  }
}

TEST(Dataset, PrepareThenReadBackEveryDocumentWithEos) {
  TempDir dir;
  const Corpus corpus = read_text_files({write_text(dir.path())}, 0.1);
  const auto out = dir.path() / "ds";
  const DatasetInfo info = prepare_dataset(corpus, PrepareOptions{out, 50, "unigram", std::nullopt}, "story");
  EXPECT_EQ(read_dataset_info(out).train_tokens, info.train_tokens);
  const Tokenizer tok(out / "tokenizer.model");
  // The train shard is exactly the documents' tokens, each followed by EOS.
  std::vector<std::uint32_t> expected;
  for (const Document& d : corpus.train) {
    for (int id : tok.encode(d.text)) expected.push_back(static_cast<std::uint32_t>(id));
    expected.push_back(static_cast<std::uint32_t>(tok.eos_id()));
  }
  const TokenShard shard(out / "train.tokens", 50);
  ASSERT_EQ(shard.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) ASSERT_EQ(shard[i], expected[i]) << i;
  EXPECT_FALSE(std::filesystem::exists(out.string() + ".tmp." + std::to_string(::getpid())));

  InputParams p = params(2, 1, 0, false);
  p.seq_len = 16;
  EXPECT_TRUE(make_input(out.string(), "validation", p, 50)->get_next());
  EXPECT_NE(error_of([&] { make_input(out.string(), "train", p, 256); }).find("has 50 pieces but VOCAB_SIZE=256"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_dataset_info(dir.path()); }).find("not a prepared dataset"), std::string::npos);
}

}  // namespace
}  // namespace paxocl::inputs
