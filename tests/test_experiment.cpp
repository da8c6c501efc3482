// Experiments and hyper-parameter overrides (every type, lists, typos, malformed values,
// inheritance from a file), and TensorBoard event files checked by an independent reader.
#include <gtest/gtest.h>

#include <fstream>

#include "common/crc32c.h"
#include "common/errors.h"
#include "config/experiment.h"
#include "config/job_config.h"
#include "proto/tensorboard.pb.h"
#include "scheduler/summary_writer.h"
#include "tests/test_support.h"

namespace paxocl {
namespace {

using config::Experiment;

template <typename F>
std::string config_error(F&& f) {
  return testing::error_message<ConfigError>(std::forward<F>(f));
}

TEST(Experiment, RegistryHoldsPaxGpuConfigs) {
  const Experiment pile = Experiment::named("Pile126M");
  EXPECT_EQ(pile.get_int("NUM_LAYERS"), 12);
  EXPECT_EQ(pile.get_int("MODEL_DIMS"), 768);
  EXPECT_EQ(pile.get_int("VOCAB_SIZE"), 50304);
  EXPECT_EQ(pile.get_int_list("ICI_MESH_SHAPE"), (std::vector<long>{8, 1, 1}));
  EXPECT_DOUBLE_EQ(pile.get_float("LEARNING_RATE"), 6e-4);
  EXPECT_EQ(pile.get_int("LR_COS_WARMUP"), 636);
  const Experiment big = Experiment::named("GPT175B");
  EXPECT_EQ(big.get_int("NUM_LAYERS"), 96);
  EXPECT_EQ(big.get_int_list("DCN_MESH_SHAPE"), (std::vector<long>{1, 32, 1}));
  EXPECT_EQ(Experiment::named("GPT5B").get_int("HIDDEN_DIMS"), 16384);
  EXPECT_EQ(Experiment::named("Default").get_string("DATA"), "kjv");
  EXPECT_NE(config_error([] { Experiment::named("Pile125M"); }).find("did you mean Pile126M"), std::string::npos);
}

TEST(Experiment, OverridesParseByTheFieldsType) {
  Experiment e = Experiment::named("Default");
  e.set("NUM_LAYERS", "6");
  e.set("PERCORE_BATCH_SIZE", "0.5");
  e.set("LEARNING_RATE", "6e-4");
  e.set("ICI_MESH_SHAPE", "[2, 1, 1]");
  e.set("DCN_MESH_SHAPE", "\"[1,2,1]\"");
  e.set("FPROP_DTYPE", "\"bfloat16\"");
  e.set("DATA", "synthetic");
  EXPECT_EQ(e.get_int("NUM_LAYERS"), 6);
  EXPECT_DOUBLE_EQ(e.get_float("PERCORE_BATCH_SIZE"), 0.5);
  EXPECT_DOUBLE_EQ(e.get_float("LEARNING_RATE"), 6e-4);
  EXPECT_EQ(e.get_int_list("ICI_MESH_SHAPE"), (std::vector<long>{2, 1, 1}));
  EXPECT_EQ(e.get_int_list("DCN_MESH_SHAPE"), (std::vector<long>{1, 2, 1}));
  EXPECT_EQ(e.get_string("FPROP_DTYPE"), "bfloat16");
  EXPECT_EQ(e.get_string("DATA"), "synthetic");
}

TEST(Experiment, BadOverridesNameTheFieldAndType) {
  Experiment e = Experiment::named("Default");
  EXPECT_NE(config_error([&] { e.set("NUM_LAYERS", "6.5"); }).find("--fdl.NUM_LAYERS=6.5: expected an integer"),
            std::string::npos);
  EXPECT_NE(config_error([&] { e.set("LEARNING_RATE", "fast"); }).find("expected a finite number"), std::string::npos);
  EXPECT_NE(config_error([&] { e.set("ICI_MESH_SHAPE", "[2,x]"); }).find("expected a list of integers"), std::string::npos);
  EXPECT_NE(config_error([&] { e.set("ICI_MESH_SHAPE", "[2,1"); }).find("expected a list of integers"), std::string::npos);
  EXPECT_NE(config_error([&] { e.set("DATA", "\"kjv"); }).find("unterminated string"), std::string::npos);
  EXPECT_NE(config_error([&] { e.set("NUM_LAYER", "2"); }).find("did you mean NUM_LAYERS"), std::string::npos);
}

// Every hyper-parameter's documented range is checked when it is set, from a flag or a file: values
// that used to wrap (static_cast<int>) or slip through (betas >= 1, max_to_keep 0) are errors.
TEST(Experiment, ValuesOutsideTheirRangeAreRefusedWhenSet) {
  Experiment e = Experiment::named("Default");
  EXPECT_NE(config_error([&] { e.set("CHECKPOINT_MAX_TO_KEEP", "0"); }).find("CHECKPOINT_MAX_TO_KEEP=0: the value must be in [1,"),
            std::string::npos);
  EXPECT_NE(config_error([&] { e.set("CHECKPOINT_MAX_TO_KEEP", "4294967296"); }).find("must be in [1, 2147483647]"),
            std::string::npos);
  EXPECT_NE(config_error([&] { e.set("NUM_LAYERS", "4294967298"); }).find("NUM_LAYERS=4294967298"), std::string::npos);
  EXPECT_NE(config_error([&] { e.set("ADAM_BETA1", "2"); }).find("ADAM_BETA1=2: the value must be in [0, 1)"), std::string::npos);
  EXPECT_THROW(e.set("ADAM_BETA2", "1"), ConfigError);
  EXPECT_THROW(e.set("MAX_SEQ_LEN", "-129"), ConfigError);
  EXPECT_THROW(e.set("INIT_STD", "0"), ConfigError);
  EXPECT_THROW(e.set("PERCORE_BATCH_SIZE", "-1"), ConfigError);
  EXPECT_NE(config_error([&] { e.set("TRACE_STEPS", "[3,0]"); }).find("every entry (here 0)"), std::string::npos);
  EXPECT_NE(config_error([&] { e.set("DCN_MESH_SHAPE", "[1,1,1,1,1]"); }).find("expected 3 or 4 entries"), std::string::npos);
  EXPECT_NE(config_error([&] { e.set("ICI_MESH_SHAPE", "[2,1]"); }).find("expected 3 or 4 entries"), std::string::npos);
  EXPECT_EQ(e.get_int("CHECKPOINT_MAX_TO_KEEP"), 10);  // nothing refused was stored
  e.set("ADAM_BETA1", "0");
  e.set("CHECKPOINT_MAX_TO_KEEP", "1");
  EXPECT_EQ(e.get_int("CHECKPOINT_MAX_TO_KEEP"), 1);

  testing::TempDir dir;
  const auto file = dir.path() / "wrapping.json";
  // The experiment of issue 14's export overflow: MAX_SEQ_LEN=-129 wrapped the layout to 16 floats.
  std::ofstream(file) << R"({"fdl_config":"Default","NUM_LAYERS":0,"MODEL_DIMS":16,"MAX_SEQ_LEN":-129,"VOCAB_SIZE":1})";
  EXPECT_NE(config_error([&] { Experiment::from_file(file); }).find("MAX_SEQ_LEN=-129"), std::string::npos);
  std::ofstream(file) << R"({"fdl_config":"Default","NUM_LAYERS":0})";
  EXPECT_NE(config_error([&] { Experiment::from_file(file); }).find("NUM_LAYERS=0"), std::string::npos);
  std::ofstream(file) << R"({"fdl_config":"Default","SEED":18446744073709551615})";  // would wrap to -1 in get<long>
  EXPECT_NE(config_error([&] { Experiment::from_file(file); }).find("expected an integer"), std::string::npos);
  std::ofstream(file) << R"({"fdl_config":"Default","LEARNING_RATE":1e999})";
  EXPECT_THROW(Experiment::from_file(file), ConfigError);
  // A float field given a string (fuzz_experiment's finding: the range check read it as a number).
  std::ofstream(file) << R"({"fdl_config":"Default","ROPE_BASE":"x"})";
  EXPECT_NE(config_error([&] { Experiment::from_file(file); }).find("ROPE_BASE=\"x\": expected a number"), std::string::npos);
  for (const std::string& name : Experiment::names()) EXPECT_NO_THROW(Experiment::named(name).model_config()) << name;
}

// Found by fuzz_experiment: a non-UTF-8 string was stored, then experiment.json could not be written.
TEST(Experiment, StringsMustBeUtf8) {
  Experiment e = Experiment::named("Default");
  EXPECT_NE(config_error([&] { e.set("DATA", "text:a\x8c\x87\x8b\xd8"); }).find("not valid UTF-8"), std::string::npos);
  EXPECT_THROW(e.set("DATA", "\xc0\xaf"), ConfigError);  // overlong '/'
  EXPECT_NO_THROW(e.set("DATA", "text:caf\xc3\xa9.txt"));  // UTF-8 is fine
  EXPECT_NO_THROW(e.to_json().dump());
}

TEST(Experiment, DeeplyNestedFilesAreRefusedNotAStackOverflow) {
  testing::TempDir dir;
  const auto file = dir.path() / "nested.json";
  std::ofstream(file) << R"({"fdl_config":"Default","TRACE_STEPS":)" << std::string(100000, '[') << std::string(100000, ']') << "}";
  EXPECT_NE(config_error([&] { Experiment::from_file(file); }).find("nested deeper than 64 levels"), std::string::npos);
}

TEST(Experiment, FileInheritsFromANamedExperimentAndRoundTrips) {
  testing::TempDir dir;
  const auto file = dir.path() / "mine.json";
  std::ofstream(file) << R"({"fdl_config": "SyntheticBench", "NUM_LAYERS": 3, "LEARNING_RATE": 2e-4,
                             "ICI_MESH_SHAPE": [1, 1, 1], "DATA": "synthetic"})";
  const Experiment e = Experiment::from_file(file);
  EXPECT_EQ(e.name(), "mine");
  EXPECT_EQ(e.get_int("NUM_LAYERS"), 3);                       // overridden
  EXPECT_EQ(e.get_int("MODEL_DIMS"), 384);                     // inherited from SyntheticBench
  EXPECT_DOUBLE_EQ(e.get_float("LEARNING_RATE"), 2e-4);
  // The resolved experiment, written out, loads back to the same values.
  const auto resolved = dir.path() / "resolved.json";
  std::ofstream(resolved) << e.to_json().dump(2);
  EXPECT_EQ(Experiment::from_file(resolved).to_json(), e.to_json());

  std::ofstream(dir.path() / "bad1.json") << R"({"NUM_LAYERS": 3})";
  EXPECT_NE(config_error([&] { Experiment::from_file(dir.path() / "bad1.json"); }).find("\"fdl_config\""), std::string::npos);
  std::ofstream(dir.path() / "bad2.json") << R"({"fdl_config": "Default", "NUM_LAYERS": "three"})";
  EXPECT_NE(config_error([&] { Experiment::from_file(dir.path() / "bad2.json"); }).find("NUM_LAYERS=\"three\": expected an integer"),
            std::string::npos);
  std::ofstream(dir.path() / "bad3.json") << "{not json";
  EXPECT_NE(config_error([&] { Experiment::from_file(dir.path() / "bad3.json"); }).find("not valid JSON"), std::string::npos);
}

// resolve_job: each process's share of the global batch and the mesh it runs, or a refusal of what
// no step program can run, before any device is opened.
TEST(JobConfig, ResolvesEachProcesssShareOrRefusesWhatCannotRun) {
  Experiment e = Experiment::named("Default");
  e.set("ICI_MESH_SHAPE", "[2,1,1]");
  e.set("DCN_MESH_SHAPE", "[2,1,1]");
  e.set("PERCORE_BATCH_SIZE", "2");
  e.set("FPROP_DTYPE", "float32");  // Default's auto is resolved against devices before resolve_job
  const config::JobConfig j = config::resolve_job(e, {}, 2, 1);
  EXPECT_EQ(j.input.batch_size, 4);  // 2 per device x 4 devices / 2 processes
  EXPECT_EQ(j.step.replica_batch, 2);
  EXPECT_EQ(j.input.num_infeed_hosts, 2);
  EXPECT_EQ(j.input.infeed_host_index, 1);
  EXPECT_EQ(j.sharding(), "data 4 x fsdp 1 (ICI [2,1,1] x DCN [2,1,1])");

  // 1.5 per device is 6 sequences in the job, 3 per process: whole per process, not per device.
  e.set("PERCORE_BATCH_SIZE", "1.5");
  EXPECT_NE(config_error([&] { config::resolve_job(e, {}, 2, 0); })
                .find("PERCORE_BATCH_SIZE=1.5 gives 3 sequences per process, not a whole number for each of its 2 "
                      "model replica(s)"),
            std::string::npos);
  // Under tensor parallelism a tensor group's devices share its sequences: 0.5 per device is one
  // sequence for each group of 2.
  e.set("ICI_MESH_SHAPE", "[1,1,2]");
  e.set("PERCORE_BATCH_SIZE", "0.5");
  const config::JobConfig tp = config::resolve_job(e, {}, 2, 1);
  EXPECT_EQ(tp.step.replica_batch, 1);
  EXPECT_EQ(tp.input.batch_size, 1);
}

// ---- TensorBoard event files ----------------------------------------------------------------

// CRC-32C computed bit by bit (independent of common/crc32c.h's table), masked as TFRecord does.
std::uint32_t reference_masked_crc(const std::string& data) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char byte : data) {
    crc ^= byte;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  crc = ~crc;
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

TEST(SummaryWriter, Crc32cOfTheStandardCheckString) {
  // CRC-32C("123456789") = 0xE3069283 (the catalogue check value), for both implementations.
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  std::uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char byte : std::string("123456789")) {
    crc ^= byte;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  EXPECT_EQ(~crc, 0xE3069283u);
}

TEST(SummaryWriter, RecordsReadBackWithValidCrcsAndTensorFlowFieldNumbers) {
  testing::TempDir dir;
  std::filesystem::path file;
  {
    scheduler::SummaryWriter w(dir.path() / "train");
    w.scalar("loss", 4.25, 10);
    w.scalar("learning_rate", 1e-3, 20);
    file = w.file();
  }
  EXPECT_EQ(file.filename().string().rfind("events.out.tfevents.", 0), 0u);
  std::ifstream in(file, std::ios::binary);
  std::vector<std::string> records;
  for (;;) {
    std::uint64_t length = 0;
    std::uint32_t length_crc = 0, data_crc = 0;
    if (!in.read(reinterpret_cast<char*>(&length), 8)) break;
    ASSERT_TRUE(in.read(reinterpret_cast<char*>(&length_crc), 4));
    EXPECT_EQ(length_crc, reference_masked_crc(std::string(reinterpret_cast<const char*>(&length), 8)));
    std::string data(length, '\0');
    ASSERT_TRUE(in.read(data.data(), static_cast<std::streamsize>(length)));
    ASSERT_TRUE(in.read(reinterpret_cast<char*>(&data_crc), 4));
    EXPECT_EQ(data_crc, reference_masked_crc(data));
    records.push_back(data);
  }
  ASSERT_EQ(records.size(), 3u);
  proto::tensorboard::Event header, first, second;
  ASSERT_TRUE(header.ParseFromString(records[0]));
  EXPECT_EQ(header.file_version(), "brain.Event:2");
  ASSERT_TRUE(first.ParseFromString(records[1]));
  EXPECT_EQ(first.step(), 10);
  ASSERT_EQ(first.summary().value_size(), 1);
  EXPECT_EQ(first.summary().value(0).tag(), "loss");
  EXPECT_FLOAT_EQ(first.summary().value(0).simple_value(), 4.25f);
  ASSERT_TRUE(second.ParseFromString(records[2]));
  EXPECT_EQ(second.summary().value(0).tag(), "learning_rate");
  // TensorFlow's wire layout: Event.step is field 2 (varint, key 0x10), Event.summary field 5
  // (key 0x2A), Summary.value field 1 (key 0x0A), Value.tag field 1, Value.simple_value field 2
  // (fixed32, key 0x15).
  EXPECT_NE(records[1].find('\x10'), std::string::npos);
  EXPECT_NE(records[1].find('\x2A'), std::string::npos);
  EXPECT_NE(records[1].find(std::string("\x0A\x04loss\x15", 7)), std::string::npos);
}

// Reads the records of a TFRecord file with the reference CRC (reads stop at the first bad one).
std::vector<std::string> read_records(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::vector<std::string> records;
  for (;;) {
    std::uint64_t length = 0;
    std::uint32_t length_crc = 0, data_crc = 0;
    if (!in.read(reinterpret_cast<char*>(&length), 8) || !in.read(reinterpret_cast<char*>(&length_crc), 4)) break;
    std::string data(length, '\0');
    if (!in.read(data.data(), static_cast<std::streamsize>(length)) || !in.read(reinterpret_cast<char*>(&data_crc), 4)) break;
    if (length_crc != reference_masked_crc(std::string(reinterpret_cast<const char*>(&length), 8)) ||
        data_crc != reference_masked_crc(data)) {
      break;
    }
    records.push_back(data);
  }
  return records;
}

TEST(SummaryWriter, ZeroValuedScalarIsWritten) {
  // proto3 leaves a plain float field out when it is 0; TensorFlow's simple_value is in a oneof, so
  // a 0 (steps_skipped, an accuracy of 0) is on the wire: key 0x15 and four zero bytes.
  testing::TempDir dir;
  std::filesystem::path file;
  {
    scheduler::SummaryWriter w(dir.path() / "train");
    w.scalar("steps_skipped", 0.0, 5);
    file = w.file();
  }
  const std::vector<std::string> records = read_records(file);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_NE(records[1].find(std::string("\x0A\x0Dsteps_skipped\x15\x00\x00\x00\x00", 20)), std::string::npos);
  proto::tensorboard::Event event;
  ASSERT_TRUE(event.ParseFromString(records[1]));
  ASSERT_EQ(event.summary().value_size(), 1);
  EXPECT_TRUE(event.summary().value(0).has_simple_value());
  EXPECT_EQ(event.summary().value(0).simple_value(), 0.0f);
}

TEST(SummaryWriter, SessionStartIsTensorFlowsSessionLogStart) {
  testing::TempDir dir;
  std::filesystem::path file;
  {
    scheduler::SummaryWriter w(dir.path() / "train");
    w.session_start(21);
    file = w.file();
  }
  const std::vector<std::string> records = read_records(file);
  ASSERT_EQ(records.size(), 2u);
  // Event.step = 21 (key 0x10, varint 0x15); Event.session_log is field 7 (key 0x3A; TensorFlow's
  // field 6 is the deprecated log_message, which TensorBoard does not read as a restart), a 2-byte
  // SessionLog holding status START = 1 (key 0x08, value 0x01).
  EXPECT_NE(records[1].find(std::string("\x10\x15\x3A\x02\x08\x01", 6)), std::string::npos);
  proto::tensorboard::Event event;
  ASSERT_TRUE(event.ParseFromString(records[1]));
  EXPECT_EQ(event.step(), 21);
  EXPECT_EQ(event.session_log().status(), proto::tensorboard::SessionLog::START);
}

}  // namespace
}  // namespace paxocl
