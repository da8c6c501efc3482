// Files read by name are refused unless they are regular files (directories where one is expected),
// before anything blocks on them: open(2) of a FIFO for reading waits for a writer that never comes,
// and /dev/zero never ends (common/regular_file.h). Each case must fail fast with a message naming
// the path; a case that blocks ends the whole test binary after 10 s (a thread stuck in open(2)
// cannot be cancelled), so the suite reports it instead of hanging.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>

#include "common/bounded_read.h"
#include "common/errors.h"
#include "common/in_file.h"
#include "common/regular_file.h"
#include "config/experiment.h"
#include "inputs/token_shard.h"
#include "inputs/tokenizer.h"
#include "models/hf_llama_io.h"
#include "models/weights_io.h"
#include "tests/test_support.h"

namespace paxocl {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::error_message;
using testing::run_command;
using testing::TempDir;

const std::string kBinary = PAXOCL_BINARY;

// The what() of the E that `f` throws; ends the process when `f` is still running after 10 s.
template <typename E, typename F>
std::string error_in_time(F f) {
  auto done = std::async(std::launch::async, [f] { return error_message<E>(f); });
  if (done.wait_for(10s) != std::future_status::ready) {
    std::fprintf(stderr, "FAIL: still blocked after 10 s: a FIFO or device was opened for reading\n");
    std::fflush(stderr);
    std::_Exit(1);  // the future's destructor would wait for the blocked thread
  }
  return done.get();
}

fs::path make_fifo(const fs::path& file) {
  if (::mkfifo(file.c_str(), 0600) != 0) throw std::runtime_error("mkfifo " + file.string() + " failed");
  return file;
}

void expect_names(const std::string& message, const fs::path& file, const std::string& what) {
  EXPECT_NE(message.find(file.string()), std::string::npos) << message;
  EXPECT_NE(message.find(what), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

// A LLaMA config.json that load_hf_llama accepts, so loading gets as far as the tensor files.
void write_hf_config(const fs::path& dir) {
  std::ofstream(dir / "config.json") << R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
    "num_key_value_heads": 2, "head_dim": 4, "max_position_embeddings": 16, "vocab_size": 32,
    "rope_theta": 10000.0, "rms_norm_eps": 1e-6, "initializer_range": 0.02, "tie_word_embeddings": false})";
}

TEST(RegularFiles, TheHelperSaysWhatAPathIs) {
  TempDir dir;
  const fs::path fifo = make_fifo(dir.path() / "fifo");
  std::ofstream(dir.path() / "plain") << "x";
  EXPECT_EQ(why_not_regular_file(dir.path() / "plain"), "");
  EXPECT_EQ(why_not_regular_file(fifo), "is a FIFO, not a regular file");
  EXPECT_EQ(why_not_regular_file("/dev/null"), "is a character device, not a regular file");
  EXPECT_EQ(why_not_regular_file(dir.path()), "is a directory, not a regular file");
  EXPECT_EQ(why_not_regular_file(dir.path() / "missing"), "no such file or directory");
  EXPECT_EQ(why_not_directory(dir.path()), "");
  EXPECT_EQ(why_not_directory(fifo), "is a FIFO, not a directory");
  EXPECT_EQ(why_not_directory(dir.path() / "plain"), "is a regular file, not a directory");
  fs::create_symlink(fifo, dir.path() / "link");  // links are followed: a link to a FIFO is refused too
  EXPECT_EQ(why_not_regular_file(dir.path() / "link"), "is a FIFO, not a regular file");
  expect_names(error_message<FileError>([&] { require_regular_file(fifo); }), fifo, "is a FIFO");
  expect_names(error_message<FileError>([&] { require_directory(fifo); }), fifo, "not a directory");

  EXPECT_TRUE(open_regular_file(dir.path() / "plain").fd.valid());
  EXPECT_EQ(open_regular_file(dir.path() / "plain").size, 1u);
  EXPECT_EQ(error_in_time<std::exception>([&] {
              if (const OpenedFile f = open_regular_file(fifo); !f.fd.valid()) throw std::runtime_error(f.refused);
            }),
            "is a FIFO, not a regular file");
  EXPECT_EQ(error_in_time<std::invalid_argument>([&] { read_file_bounded(fifo, 100); }), "is a FIFO, not a regular file");
  EXPECT_EQ(error_in_time<std::invalid_argument>([&] { read_file_bounded("/dev/zero", 100); }),
            "is a character device, not a regular file");
  expect_names(error_in_time<FileError>([&] { InFile{fifo}; }), fifo, "is a FIFO, not a regular file");
}

TEST(RegularFiles, WeightFilesThatAreFifosOrDevicesAreRefused) {
  TempDir dir;
  const fs::path fifo = make_fifo(dir.path() / "model.safetensors");
  expect_names(error_in_time<FileError>([&] { models::load_safetensors(fifo, 2, 16); }), fifo, "is a FIFO, not a regular file");
  expect_names(error_in_time<FileError>([&] { models::load_weights_file(fifo, 2, 16); }), fifo, "is a FIFO");
  const fs::path llmc = make_fifo(dir.path() / "model.bin");
  expect_names(error_in_time<FileError>([&] { models::load_llmc(llmc, 16); }), llmc, "is a FIFO");
  for (const fs::path device : {"/dev/zero", "/dev/null"}) {
    expect_names(error_in_time<FileError>([&] { models::load_weights_file(device, 2, 16); }), device,
                 "is a character device, not a regular file");
  }
}

TEST(RegularFiles, AHuggingFaceShardThatIsAFifoIsRefused) {
  // The bug: an index naming a FIFO as a shard blocked `pax-ocl eval --init_from=<dir>` for ever.
  TempDir dir;
  write_hf_config(dir.path());
  std::ofstream(dir.path() / "model.safetensors.index.json")
      << R"({"metadata": {}, "weight_map": {"model.embed_tokens.weight": "model-00001-of-00001.safetensors"}})";
  const fs::path shard = make_fifo(dir.path() / "model-00001-of-00001.safetensors");
  expect_names(error_in_time<FileError>([&] { models::load_hf_llama(dir.path(), 16); }), shard, "is a FIFO");

  // The index itself, and a single model.safetensors, alike.
  fs::remove(dir.path() / "model.safetensors.index.json");
  const fs::path index = make_fifo(dir.path() / "model.safetensors.index.json");
  expect_names(error_in_time<FileError>([&] { models::load_hf_llama(dir.path(), 16); }), index, "is a FIFO");
  const fs::path single = make_fifo(dir.path() / "model.safetensors");
  expect_names(error_in_time<FileError>([&] { models::load_hf_llama(dir.path(), 16); }), single, "is a FIFO");
  // config.json too.
  fs::remove(dir.path() / "config.json");
  const fs::path config = make_fifo(dir.path() / "config.json");
  expect_names(error_in_time<FileError>([&] { models::load_hf_llama(dir.path(), 16); }), config, "is a FIFO");
}

TEST(RegularFiles, ExperimentTokenizerAndShardFifosAreRefused) {
  TempDir dir;
  const fs::path experiment = make_fifo(dir.path() / "experiment.json");
  expect_names(error_in_time<ConfigError>([&] { config::Experiment::from_file(experiment); }), experiment, "is a FIFO");
  const fs::path tokenizer = make_fifo(dir.path() / "tokenizer.model");
  expect_names(error_in_time<DataError>([&] { inputs::Tokenizer{tokenizer}; }), tokenizer, "is a FIFO");
  const fs::path shard = make_fifo(dir.path() / "train_000.tokens");
  expect_names(error_in_time<DataError>([&] { inputs::TokenShard(shard, 0); }), shard, "is a FIFO");
  expect_names(error_in_time<DataError>([&] { inputs::TokenShard("/dev/zero", 0); }), "/dev/zero", "is a character device");
}

TEST(RegularFiles, TheCliRefusesAFifoAsInitFromInOneLine) {
  TempDir dir;
  const fs::path fifo = make_fifo(dir.path() / "weights.safetensors");
  // `timeout` ends a blocked binary, so a regression fails here instead of hanging the suite.
  const auto r = run_command("timeout 60 " + kBinary + " eval --init_from=" + fifo.string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.exit_code, 124) << "blocked on the FIFO";
  expect_names(r.err.substr(0, r.err.find_last_not_of('\n') + 1), fifo, "is a FIFO, not a regular file");
}

}  // namespace
}  // namespace paxocl
