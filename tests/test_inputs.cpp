// The input pipeline: sharding across simulated hosts, evaluation passes, resume exactness,
// prefetching, token shards and their failure modes, SentencePiece, corpora and prepared datasets.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "common/errors.h"
#include "common/rng.h"
#include "inputs/corpus.h"
#include "inputs/dataset.h"
#include "inputs/prefetch_input.h"
#include "inputs/token_shard.h"
#include "inputs/tokenizer.h"
#include "inputs/windowed_input.h"
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

template <typename F>
std::string error_of(F&& f) {
  return paxocl::testing::error_message<DataError>(std::forward<F>(f));
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
    EXPECT_EQ(inputs[0]->state().epoch, 1u) << "the epoch rolls over";
    EXPECT_EQ(inputs[0]->state().index, 0u);
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

// ---- resuming under other settings (the state string is what a checkpoint stores) ----------

// "epoch=E,index=I": the position, without the geometry.
std::string position(const BaseInput& in) {
  const InputState s = in.state();
  return "epoch=" + std::to_string(s.epoch) + ",index=" + std::to_string(s.index);
}

// Every row of the next batch is real data (weight 1): a training input never pads.
void expect_real_batch(BaseInput& in) {
  const auto b = in.get_next();
  ASSERT_TRUE(b);
  const auto [windows, padded] = windows_of(*b);
  EXPECT_EQ(padded, 0) << "a training batch of padding";
  EXPECT_EQ(static_cast<int>(windows.size()), b->batch);
}

TEST(InputState, GeometryRoundTripsAndOldStatesStillParse) {
  const std::string full = "epoch=3,index=17,seq_len=128,global_batch=16,tokens=1048576";
  EXPECT_EQ(InputState::parse(full).to_string(), full);
  EXPECT_EQ(InputState::parse("epoch=3,index=17").to_string(), "epoch=3,index=17");  // saved before geometry
  WindowedInput in(counting_stream(201), params(2, 2, 1, true));
  EXPECT_EQ(in.state().to_string(), "epoch=0,index=0,seq_len=4,global_batch=4,tokens=201");
}

TEST(InputState, MalformedStatesAreDataErrors) {
  for (const char* bad : {"epoch=1", "epoch=0,index=-1", "epoch=-1,index=0", "epoch=0,index=1x", "epoch=0,index=",
                          "epoch=0,index=99999999999999999999999", "epoch=0,index=1,index=2", "epoch=0,index=1,shard=2",
                          "epoch=0,index=1,seq_len=4", "epoch=0,index=1,seq_len=0,global_batch=4,tokens=201", "",
                          "epoch=0,index=1,"}) {
    EXPECT_NE(error_of([&] { InputState::parse(bad); }).find("is malformed"), std::string::npos) << bad;
  }
}

TEST(WindowedInput, RestoringAnIndexPastTheEpochIsADataErrorNotAnEpochOfPadding) {
  // 201 tokens, T=4: 50 windows; batch 2 x 2 hosts: 12 batches per epoch.
  for (const char* state : {"epoch=0,index=12", "epoch=5,index=40", "epoch=0,index=12,seq_len=4,global_batch=4,tokens=201",
                            "epoch=0,index=18446744073709551615"}) {
    WindowedInput in(counting_stream(201), params(2, 2, 1, true));
    const std::string e = error_of([&] { in.restore(InputState::parse(state)); });
    EXPECT_NE(e.find("past the end"), std::string::npos) << state << ": " << e;
    EXPECT_EQ(position(in), "epoch=0,index=0") << "a rejected state changes nothing";
  }
  // A mapped state must first lie inside the epoch it was saved in: 201 tokens / T=4 / 2 = 25 batches.
  WindowedInput other(counting_stream(201), params(4, 1, 0, true));
  EXPECT_NE(error_of([&] { other.restore(InputState::parse("epoch=0,index=25,seq_len=4,global_batch=2,tokens=201")); })
                .find("past the end of its own epoch"),
            std::string::npos);
  EXPECT_NO_THROW(other.restore(InputState::parse("epoch=0,index=24,seq_len=4,global_batch=2,tokens=201")));
  // Evaluation: at most the pass's batches (13 = ceil(50 / 4)), and only the same geometry.
  WindowedInput eval(counting_stream(201), params(2, 2, 1, false));
  EXPECT_NO_THROW(eval.restore(InputState::parse("epoch=0,index=13")));
  EXPECT_FALSE(eval.get_next()) << "a finished pass";
  EXPECT_THROW(eval.restore(InputState::parse("epoch=0,index=14")), DataError);
  EXPECT_THROW(eval.restore(InputState::parse("epoch=0,index=1,seq_len=8,global_batch=4,tokens=201")), DataError);
}

TEST(WindowedInput, ResumingUnderAnotherGeometryMapsTheTokensConsumed) {
  // Saved with T=4, batch 2 x 2 hosts (16 tokens a step) after 10 of 12 batches: 160 tokens into epoch 3.
  auto saved_by = std::make_unique<WindowedInput>(counting_stream(201), params(2, 2, 0, true));
  saved_by->restore(InputState::parse("epoch=3,index=9"));
  saved_by->get_next();
  const std::string saved = saved_by->state().to_string();
  ASSERT_EQ(saved, "epoch=3,index=10,seq_len=4,global_batch=4,tokens=201");
  const struct {
    int batch, hosts, seq_len;
    std::size_t tokens;
    std::string expected;
  } cases[] = {
      {4, 1, 4, 201, "epoch=3,index=10"},  // another mesh, the same global batch: exact
      {8, 1, 4, 201, "epoch=3,index=5"},   // a larger batch (16 windows a step, 6 steps an epoch)
      {1, 2, 4, 201, "epoch=3,index=20"},  // a smaller one
      {2, 2, 8, 201, "epoch=3,index=5"},   // MAX_SEQ_LEN 8: 32 tokens a step, 160 / 32
      {2, 2, 4, 121, "epoch=4,index=3"},   // less data: 7 batches an epoch, so 10 batches in wraps to the next
      {2, 2, 4, 73, "epoch=5,index=2"},    // 4 batches an epoch: two epochs on
  };
  for (const auto& c : cases) {
    InputParams p = params(c.batch, c.hosts, 0, true);
    p.seq_len = c.seq_len;
    WindowedInput in(counting_stream(c.tokens), p);
    in.restore(InputState::parse(saved));
    EXPECT_EQ(position(in), c.expected) << c.batch << "x" << c.hosts << " T=" << c.seq_len << " tokens " << c.tokens;
    for (std::size_t k = 0; k < in.batches_per_epoch() + 1; ++k) expect_real_batch(in);
  }
}

TEST(PrefetchInput, ARejectedRestoreKeepsThePosition) {
  PrefetchInput in(std::make_unique<WindowedInput>(counting_stream(201), params(2, 1, 0, true)), 3);
  in.get_next();
  in.get_next();
  in.get_next();
  PrefetchInput same(std::make_unique<WindowedInput>(counting_stream(201), params(2, 1, 0, true)), 3);
  same.restore(InputState::parse("epoch=0,index=3"));
  EXPECT_THROW(in.restore(InputState::parse("epoch=0,index=-1")), DataError);
  EXPECT_THROW(in.restore(InputState::parse("epoch=0,index=99")), DataError);
  EXPECT_EQ(position(in), "epoch=0,index=3");
  EXPECT_EQ(in.get_next()->ids, same.get_next()->ids) << "continues where it was";
  in.restore(InputState::parse("epoch=2,index=5,seq_len=4,global_batch=4,tokens=201"));  // mapped: 80 tokens, 8 per step
  EXPECT_EQ(position(in), "epoch=2,index=10") << "state() reports the mapped position";
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
}

// ---- token shards --------------------------------------------------------------------------

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

// A shard header claiming `count` tokens of `width` bytes, followed by `payload` bytes of 0x41.
void write_shard_header(const std::filesystem::path& f, std::uint32_t width, std::uint64_t count, std::size_t payload) {
  char header[kShardHeaderBytes] = {};
  const std::uint32_t vocab = 256;
  std::memcpy(header, kShardMagic, sizeof kShardMagic);
  std::memcpy(header + 8, &kShardVersion, 4);
  std::memcpy(header + 12, &width, 4);
  std::memcpy(header + 16, &count, 8);
  std::memcpy(header + 24, &vocab, 4);
  std::ofstream out(f, std::ios::binary | std::ios::trunc);
  out.write(header, sizeof header);
  for (std::size_t i = 0; i < payload; ++i) out.put('A');
}

TEST(TokenShard, ACountThatWrapsTheSizeArithmeticIsADataErrorNotAnOutOfBoundsRead) {
  TempDir dir;
  const auto f = dir.path() / "wrap.tokens";
  constexpr std::uint64_t k2p62 = 1ull << 62, k2p63 = 1ull << 63;
  const struct {
    std::uint32_t width;
    std::uint64_t count;
    std::size_t payload;  // 32 + count * width == 32 + payload modulo 2^64
  } cases[] = {
      {2, k2p63 + 1, 2},      // the reproduced 34-byte file
      {2, k2p63, 0},          // a bare header claiming 2^63 tokens
      {4, k2p62 + 1, 4},
      {4, k2p63 + 1, 4},
      {4, 3 * k2p62, 0},
      {4, k2p62 + 1024, 4096},
  };
  for (const auto& c : cases) {
    write_shard_header(f, c.width, c.count, c.payload);
    for (std::uint32_t vocab : {0u, 256u}) {  // with a vocabulary, every token is scanned
      const std::string e = error_of([&] { TokenShard(f, vocab); });
      EXPECT_NE(e.find(f.string()), std::string::npos) << e;
      EXPECT_NE(e.find(fmt::format("header's {} tokens of {} bytes need more than 2^64 bytes", c.count, c.width)),
                std::string::npos)
          << e;
    }
  }
  write_shard_header(f, 4, 0, 2);  // half a token
  EXPECT_NE(error_of([&] { TokenShard(f, 0); }).find("trailing bytes"), std::string::npos);
  write_shard_header(f, 2, 5, 6);  // 3 tokens held, 5 claimed
  EXPECT_NE(error_of([&] { TokenShard(f, 0); }).find("need 42 bytes (truncated or a corrupt header)"), std::string::npos);
}

TEST(TokenShard, TheWriterRefusesTokensOutsideTheVocabulary) {
  TempDir dir;
  const auto f = dir.path() / "x.tokens";
  EXPECT_NE(error_of([&] { write_token_shard(f, std::vector<std::uint32_t>{1, 70000}, 65536); })
                .find("token 70000 at position 1 is >= the vocabulary size 65536"),
            std::string::npos);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "no file, not even a temporary one";
}

// ---- llm.c token files -----------------------------------------------------------------------

using paxocl::testing::write_llmc_tokens;

TEST(LlmcShard, ReadsLlmcFilesTokenForTokenInBothFormats) {
  TempDir dir;
  const std::vector<std::uint32_t> gpt2 = {0, 1, 50256, 65535, 12345}, llama3 = {128255, 70000, 3};
  write_llmc_tokens(dir.path() / "a_train.bin", gpt2);                                   // magic 20240520 v1 uint16
  write_llmc_tokens(dir.path() / "b_train.bin", llama3, 20240801, 7, 4);                 // magic 20240801 v7 uint32
  EXPECT_EQ(std::filesystem::file_size(dir.path() / "a_train.bin"), 1024u + 5 * 2);
  const TokenShard a(dir.path() / "a_train.bin", 65536);
  ASSERT_EQ(a.size(), gpt2.size());
  for (std::size_t i = 0; i < gpt2.size(); ++i) EXPECT_EQ(a[i], gpt2[i]) << i;
  ASSERT_NE(a.llmc_format(), nullptr);
  EXPECT_EQ(a.llmc_format()->magic, 20240520);
  EXPECT_EQ(a.vocab_size(), 0u) << "llm.c records no vocabulary";
  const TokenShard b(dir.path() / "b_train.bin", 128256);
  ASSERT_EQ(b.size(), llama3.size());
  for (std::size_t i = 0; i < llama3.size(); ++i) EXPECT_EQ(b[i], llama3[i]) << i;
  EXPECT_EQ(b.llmc_format()->magic, 20240801);
  // llm.c files and pax-ocl shards form one stream together.
  write_token_shard(dir.path() / "c_train.tokens", std::vector<std::uint32_t>{7, 8}, 200000);
  const TokenStream s = TokenStream::from_shards(
      {dir.path() / "a_train.bin", dir.path() / "b_train.bin", dir.path() / "c_train.tokens"}, 200000);
  ASSERT_EQ(s.size(), 10u);
  std::vector<int> out;
  s.copy_window(3, 7, out);
  EXPECT_EQ(out, (std::vector<int>{65535, 12345, 128255, 70000, 3, 7, 8}));
  EXPECT_EQ(TokenShard(dir.path() / "c_train.tokens", 0).llmc_format(), nullptr);
}

TEST(LlmcShard, BadLlmcFilesAreOneLineDataErrorsNamingTheFile) {
  TempDir dir;
  const auto f = dir.path() / "bad_train.bin";
  const std::vector<std::uint32_t> three = {1, 2, 3};
  const struct {
    std::function<void()> write;
    std::uint32_t vocab;
    std::string says;
  } cases[] = {
      {[&] { write_llmc_tokens(f, three, 20240521); }, 0, "bad magic"},
      {[&] { write_llmc_tokens(f, three, 20240520, 2); }, 0, "llm.c format version 2 is not supported (magic 20240520 goes with version 1)"},
      {[&] { write_llmc_tokens(f, three, 20240801, 1, 4); }, 0, "llm.c format version 1 is not supported (magic 20240801 goes with version 7)"},
      {[&] {
         write_llmc_tokens(f, three);
         std::filesystem::resize_file(f, 1000);
       },
       0, "1000 bytes, shorter than the 1024-byte llm.c header (truncated?)"},
      {[&] {
         write_llmc_tokens(f, three);
         std::filesystem::resize_file(f, 1024 + 5);  // the last token cut in half
       },
       0, "1029 bytes, but the header's 3 tokens of 2 bytes need 1030 bytes (truncated or a corrupt header)"},
      {[&] { write_llmc_tokens(f, three, 20240520, 1, 2, 4); }, 0, "header's 4 tokens of 2 bytes need 1032 bytes (truncated"},
      // The largest count an int32 header holds: 1024 + 2 * (2^31 - 1) bytes, nowhere near the file.
      {[&] { write_llmc_tokens(f, three, 20240520, 1, 2, 2147483647); }, 0,
       "1030 bytes, but the header's 2147483647 tokens of 2 bytes need 4294968318 bytes (truncated or a corrupt header)"},
      {[&] { write_llmc_tokens(f, three, 20240801, 7, 4, 2147483647); }, 0,
       "header's 2147483647 tokens of 4 bytes need 8589935612 bytes (truncated"},
      {[&] { write_llmc_tokens(f, three, 20240520, 1, 2, 2); }, 0, "need 1028 bytes (trailing bytes)"},
      {[&] { write_llmc_tokens(f, three, 20240520, 1, 2, -3); }, 0, "token count -3 is negative"},
      {[&] { write_llmc_tokens(f, {}); }, 0, "holds no tokens"},
      {[&] { write_llmc_tokens(f, {5, 50256, 50257}); }, 50257,
       "token 50257 at position 2 is >= VOCAB_SIZE=50257; the tokenizer that wrote it does not match the model (llm.c "
       "GPT-2 format, which records no vocabulary; GPT-2's tokenizer has 50257 ids)"},
  };
  for (const auto& c : cases) {
    c.write();
    const std::string e = error_of([&] { TokenShard(f, c.vocab); });
    EXPECT_NE(e.find("token shard " + f.string() + ": "), std::string::npos) << e;
    EXPECT_NE(e.find(c.says), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  write_llmc_tokens(f, {5, 50256});
  EXPECT_EQ(TokenShard(f, 50257).size(), 2u) << "GPT-2's last id fits its vocabulary";
}

TEST(LlmcShard, ADirectoryOfLlmcFilesIsTrainingAndValidationDataInNameOrder) {
  TempDir dir;
  const auto d = dir.path() / "fineweb10B";
  std::filesystem::create_directories(d);
  auto counting = [](std::uint32_t from, std::uint32_t n) {
    std::vector<std::uint32_t> t(n);
    for (std::uint32_t i = 0; i < n; ++i) t[i] = from + i;
    return t;
  };
  // Written out of name order; the stream follows the names.
  write_llmc_tokens(d / "fineweb_train_000002.bin", counting(12, 12));
  write_llmc_tokens(d / "fineweb_train_000001.bin", counting(0, 12));
  write_llmc_tokens(d / "fineweb_val_000000.bin", counting(100, 8));
  write_llmc_tokens(d / ".fineweb_train_000003.bin", counting(0, 4));  // hidden: skipped, as glob does
  std::ofstream(d / "notes_train.txt") << "not a shard\n";
  EXPECT_EQ(llmc_split_files(d, "train"),
            (std::vector<std::filesystem::path>{d / "fineweb_train_000001.bin", d / "fineweb_train_000002.bin"}));
  EXPECT_EQ(llmc_split_files(d, "validation"), std::vector<std::filesystem::path>{d / "fineweb_val_000000.bin"});

  // Evaluation reads windows in order: the train split is 0..23 across both files, validation 100..107.
  const auto train = make_input(d.string(), "train", params(6, 1, 0, false), 50257);
  const auto [train_windows, train_padded] = windows_of(*train->get_next());
  EXPECT_EQ(train_windows, (std::vector<int>{0, 1, 2, 3, 4}));  // windows of T + 1 tokens start every T: (24 - 1) / 4
  EXPECT_EQ(train_padded, 1);
  const auto validation = make_input(d.string(), "validation", params(2, 1, 0, false), 50257);
  const auto first = validation->get_next();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->ids[0], 100);
  EXPECT_EQ(first->targets[0], 101);

  // Token ids are checked against the model's vocabulary.
  EXPECT_NE(error_of([&] { make_input(d.string(), "validation", params(2, 1, 0, false), 104); })
                .find("fineweb_val_000000.bin: token 104 at position 4 is >= VOCAB_SIZE=104"),
            std::string::npos);
  // No validation files: a data error for that split only (training skips eval_test with a warning).
  std::filesystem::remove(d / "fineweb_val_000000.bin");
  EXPECT_NE(error_of([&] { make_input(d.string(), "validation", params(2, 1, 0, false), 50257); })
                .find(d.string() + " has llm.c training files but no validation files (*_val*.bin)"),
            std::string::npos);
  EXPECT_TRUE(make_input(d.string(), "train", params(2, 1, 0, false), 50257)->get_next());
  // A directory that is neither a dataset nor llm.c's.
  const auto empty = dir.path() / "empty";
  std::filesystem::create_directories(empty);
  EXPECT_NE(error_of([&] { make_input(empty.string(), "train", params(2, 1, 0, false), 50257); })
                .find(empty.string() + " is neither a prepared dataset (no dataset.json; create one with `pax-ocl data "
                                       "prepare`) nor a directory of llm.c token files (*_train*.bin, *_val*.bin)"),
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
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) expected += ' ';  // (not `(i ? " " : "") + ...`: GCC 12's -Wrestrict false positive)
    expected += std::to_string(ids[i]);
  }
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
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(name == "story.txt" || name == "ds" || name == "ds.lock") << name << " left behind";
  }
  std::filesystem::create_directory(dir.path() / "probe");  // as the umask makes directories (not 0700)
  EXPECT_EQ(std::filesystem::status(out).permissions(), std::filesystem::status(dir.path() / "probe").permissions());

  InputParams p = params(2, 1, 0, false);
  p.seq_len = 16;
  EXPECT_TRUE(make_input(out.string(), "validation", p, 50)->get_next());
  EXPECT_NE(error_of([&] { make_input(out.string(), "train", p, 256); }).find("has 50 pieces but VOCAB_SIZE=256"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_dataset_info(dir.path()); }).find("not a prepared dataset"), std::string::npos);
}

TEST(Dataset, PathsWithSpacesAndCommas) {
  TempDir dir;
  const auto root = dir.path() / "my data, v2";
  std::filesystem::create_directories(root);
  const Corpus corpus = read_text_files({write_text(root)}, 0.1);
  const auto out = root / "the set";
  EXPECT_EQ(prepare_dataset(corpus, PrepareOptions{out, 50, "bpe", std::nullopt}, "story").vocab_size, 50);
  EXPECT_EQ(Tokenizer(out / "tokenizer.model").vocab_size(), 50);
}

// A run killed mid-way leaves DIR.tmp.XXXXXX, or (between its two renames) DIR missing and the old
// dataset at DIR.old.XXXXXX: the next run puts the dataset back and deletes the leftovers, and
// nothing else.
TEST(Dataset, WhatAnInterruptedPreparationLeftIsPutBackOrTidiedUp) {
  TempDir dir;
  const Corpus corpus = read_text_files({write_text(dir.path())}, 0.1);
  const auto out = dir.path() / "ds";
  prepare_dataset(corpus, PrepareOptions{out, 50, "bpe", std::nullopt}, "story");
  std::filesystem::rename(out, dir.path() / "ds.old.Ab12cD");
  std::filesystem::create_directories(dir.path() / "ds.tmp.xY3456" / "junk");
  std::filesystem::create_directories(dir.path() / "ds.tmp.mine");     // not a name prepare makes
  std::filesystem::create_directories(dir.path() / "ds.old.Ab12cDe");  // nor this
  int prepared = 0;
  EXPECT_FALSE(ensure_dataset(PrepareOptions{out, 50, "bpe", std::nullopt},
                              [&] {
                                ++prepared;
                                return corpus;
                              },
                              "story"));
  EXPECT_EQ(prepared, 0) << "the old dataset goes back instead";
  EXPECT_EQ(read_dataset_info(out).vocab_size, 50);
  std::set<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) left.insert(entry.path().filename().string());
  EXPECT_EQ(left, (std::set<std::string>{"story.txt", "ds", "ds.lock", "ds.tmp.mine", "ds.old.Ab12cDe"}));
}

// Several processes ask for one dataset at once (the ranks of a job on first use of the KJV, or
// independent jobs sharing PAX_OCL_DATA_DIR): one prepares, the others wait and reuse it.
TEST(Dataset, ConcurrentProcessesPrepareOnceAndAllGetTheDataset) {
  TempDir dir;
  const auto text = write_text(dir.path());
  const auto root = dir.path() / "data dir";  // fresh: not even created yet
  const auto marks = dir.path() / "prepared-by";
  constexpr int kProcesses = 3;
  std::vector<pid_t> children;
  for (int i = 0; i < kProcesses; ++i) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 0;
      try {
        ensure_dataset(PrepareOptions{root / "ds", 50, "bpe", std::nullopt},
                       [&] {
                         std::ofstream(marks, std::ios::app) << ::getpid() << "\n";
                         ::usleep(200 * 1000);  // all three are surely past the "is it there?" check
                         return read_text_files({text}, 0.1);
                       },
                       "story");
        TokenShard(root / "ds" / "train.tokens", 50);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %d: %s\n", i, e.what());
        code = 1;
      }
      std::_Exit(code);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a process failed (see its line above)";
  }
  std::ifstream in(marks);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 1) << "prepared by: " << all;
  EXPECT_EQ(read_dataset_info(root / "ds").vocab_size, 50);
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(name == "ds" || name == "ds.lock") << name << " left behind";
  }
}

}  // namespace
}  // namespace paxocl::inputs
