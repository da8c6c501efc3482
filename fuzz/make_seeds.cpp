// make_seeds OUT_DIR: writes the seed corpus of every fuzz target into OUT_DIR/<target>/, using the
// project's own writers (so the seeds are valid files of today's formats), reproducibly: the same
// bytes on every run (scripts/fuzz.sh runs it before fuzzing).
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint_writer.h"
#include "common/float16.h"
#include "common/safetensors.h"
#include "config/experiment.h"
#include "fuzz/fuzz_support.h"
#include "fuzz/hf_llama_input.h"
#include "fuzz/ssm_metadata_input.h"
#include "inputs/token_shard.h"
#include "models/hf_llama_io.h"
#include "models/parameter_layout.h"
#include "models/tensor_names.h"
#include "models/weights_io.h"

using namespace paxocl;
namespace fs = std::filesystem;

namespace {
fs::path out_root;

void seed(const std::string& target, const std::string& name, const std::string& bytes) {
  fs::create_directories(out_root / target);
  fuzz::write_file(out_root / target / name, bytes);
}

// A safetensors file written by hand (other dtypes than the project's F32 writer): the header's
// length (8 bytes, little-endian), the header space-padded to a multiple of 8 bytes, the data.
std::string safetensors_bytes(std::string header, const std::string& data) {
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[i] = static_cast<char>(header.size() >> (8 * i));
  return file + header + data;
}

void token_shard_seeds() {
  const fs::path tmp = fuzz::scratch_dir() / "shard";
  std::vector<std::uint32_t> tokens;
  for (std::uint32_t i = 0; i < 40; ++i) tokens.push_back(i * 7 % 256);
  inputs::write_token_shard(tmp, tokens, 256);  // uint16 tokens
  seed("fuzz_token_shard", "uint16.shard", fuzz::read_file(tmp));
  for (auto& t : tokens) t *= 1000;
  inputs::write_token_shard(tmp, tokens, 300000);  // uint32 tokens
  seed("fuzz_token_shard", "uint32.shard", fuzz::read_file(tmp));
  inputs::write_token_shard(tmp, std::vector<std::uint32_t>{1, 2}, 0);  // vocabulary unknown
  seed("fuzz_token_shard", "two_tokens.shard", fuzz::read_file(tmp));
  // llm.c token files, which the project reads but does not write: int32[256] header, then tokens.
  for (const inputs::LlmcFormat& format : inputs::kLlmcFormats) {
    std::string bytes(inputs::kLlmcHeaderBytes, '\0');
    const std::int32_t header[3] = {format.magic, format.version, 40};
    std::memcpy(bytes.data(), header, sizeof header);
    for (std::uint32_t i = 0; i < 40; ++i) {
      const std::uint32_t token = i * 7 % 256;
      bytes.append(reinterpret_cast<const char*>(&token), format.bytes_per_token);  // little-endian: low bytes first
    }
    seed("fuzz_token_shard", "llmc_" + std::to_string(format.magic) + ".bin", bytes);
  }
}

void weights_seeds() {
  const fs::path st = fuzz::scratch_dir() / "w.safetensors", llmc = fuzz::scratch_dir() / "w.bin";
  models::GptConfig padded = fuzz::tiny_config();
  padded.vocab_size = 12;  // 4 padding rows in llm.c files
  for (const auto& [name, config] : {std::pair{"tiny", fuzz::tiny_config()}, std::pair{"padded", padded}}) {
    models::save_safetensors(st, fuzz::tiny_weights(config));
    seed("fuzz_safetensors", std::string(name) + ".safetensors", fuzz::read_file(st));
    models::save_llmc(llmc, fuzz::tiny_weights(config));
    seed("fuzz_llmc_weights", std::string(name) + ".bin", fuzz::read_file(llmc));
  }
  // Other dtypes and an empty tensor, for the reader alone.
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},)"
      R"("b":{"dtype":"I64","shape":[1,1],"data_offsets":[4,12]},"c":{"dtype":"BF16","shape":[0],"data_offsets":[12,12]}})";
  seed("fuzz_safetensors", "dtypes.safetensors", safetensors_bytes(header, std::string(12, '\x01')));
}

void hf_llama_seeds() {
  namespace in = fuzz::hf_llama_input;
  const fs::path dir = fuzz::scratch_dir() / "llama";
  models::save_hf_llama(dir, fuzz::tiny_weights(fuzz::tiny_llama_config()));
  const std::string config = fuzz::read_file(dir / in::kFiles[in::kConfig]);
  const std::string whole = fuzz::read_file(dir / "model.safetensors");
  seed("fuzz_hf_llama", "single_file", fuzz::join_sections(in::kSingleFile | in::kNoIndex, {config, "", whole, ""}));
  seed("fuzz_hf_llama", "file_path", fuzz::join_sections(in::kLoadFile | in::kNoIndex, {config, "", whole, ""}));
  // As transformers shards it, with an index: the embedding and layers in shard 1 (F32), the final
  // norm and the head in shard 2 (BF16, Hugging Face's usual dtype; these values are exact in it).
  // Once more tied (tie_word_embeddings, no lm_head.weight), loaded with alignment 16.
  const SafetensorsReader reader(dir / "model.safetensors");
  for (const bool tied : {false, true}) {
    nlohmann::ordered_json header[2] = {{{"__metadata__", {{"format", "pt"}}}}, {{"__metadata__", {{"format", "pt"}}}}};
    nlohmann::ordered_json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", nlohmann::ordered_json::object()}};
    std::string data[2];
    for (const auto& [name, entry] : reader.entries()) {
      if (tied && name == "lm_head.weight") continue;
      const int shard = name == "model.norm.weight" || name == "lm_head.weight" ? 1 : 0;
      const std::vector<float> values = reader.read_f32(name);
      std::string bytes;
      if (shard == 0) bytes.assign(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
      for (const float v : shard == 1 ? values : std::vector<float>{}) {
        const std::uint16_t b = float_to_bf16(v);
        bytes.append(reinterpret_cast<const char*>(&b), sizeof b);
      }
      header[shard][name] = {{"dtype", shard == 0 ? "F32" : "BF16"},
                             {"shape", entry.shape},
                             {"data_offsets", {data[shard].size(), data[shard].size() + bytes.size()}}};
      data[shard] += bytes;
      index["weight_map"][name] = in::kFiles[in::kShard1 + shard];
    }
    index["metadata"]["total_size"] = data[0].size() + data[1].size();
    nlohmann::ordered_json c = nlohmann::ordered_json::parse(config);
    c["tie_word_embeddings"] = tied;
    seed("fuzz_hf_llama", tied ? "sharded_tied" : "sharded",
         fuzz::join_sections(tied ? in::kAligned : 0, {c.dump(2), index.dump(2), safetensors_bytes(header[0].dump(), data[0]),
                                                       safetensors_bytes(header[1].dump(), data[1])}));
  }
}

// What pax-ocl's export (save_safetensors) writes into __metadata__ for each model, and what it
// wrote before it recorded every setting (f3fe53c: the SSM settings alone; NUM_HEADS then given).
void ssm_metadata_seeds() {
  namespace in = fuzz::ssm_metadata_input;
  namespace hf = models::tensor_names::hf;
  const fs::path file = fuzz::scratch_dir() / "ssm.safetensors";
  const char* names[] = {"attention_ssm", "ssm", "ssm_attention", "attention"};
  for (std::size_t m = 0; m < in::models().size(); ++m) {
    models::save_safetensors(file, fuzz::tiny_weights(in::models()[m]));
    const nlohmann::json metadata = SafetensorsReader(file).metadata();
    seed("fuzz_ssm_metadata", names[m], static_cast<char>(m) + in::metadata_lines(metadata));
    if (in::models()[m].ssm_blocks() == 0) continue;
    nlohmann::ordered_json before = {{"format", "pt"}};
    for (const std::string_view k : {hf::kMetaBlockKinds, hf::kMetaSsmStepSize, hf::kMetaSsmHippoType, hf::kMetaSsmLMax}) {
      before[std::string(k)] = metadata.at(std::string(k));
    }
    seed("fuzz_ssm_metadata", std::string(names[m]) + "_before_the_record",
         static_cast<char>(m | in::kGiveHeads) + in::metadata_lines(before));
  }
}

void checkpoint_seeds() {
  const models::ParameterLayout layout(fuzz::tiny_config(), 1);
  const checkpoint::CheckpointDir dir(fuzz::scratch_dir() / "checkpoints");
  // One process holding everything (whole tensors), and one whose slices split tensors into pieces.
  const std::vector<std::vector<std::size_t>> splits = {{0}, {0, 100, 1000}};
  for (std::size_t k = 0; k < splits.size(); ++k) {
    fs::remove_all(dir.root());
    checkpoint::Snapshot s;
    s.step = 7;
    s.input_state = "epoch 0 position 12";
    s.sharding = "data 1";
    s.experiment_json = "{}";
    for (std::size_t i = 0; i < splits[k].size(); ++i) {
      const std::size_t begin = splits[k][i], end = i + 1 < splits[k].size() ? splits[k][i + 1] : layout.total();
      std::vector<float> params;
      for (std::size_t j = begin; j < end; ++j) params.push_back(static_cast<float>(j % 13));
      s.slices.push_back(checkpoint::StateSlice::of(begin, std::move(params), std::vector<float>(end - begin, 0.25f),
                                                    std::vector<float>(end - begin, 0.125f)));
    }
    fs::create_directories(dir.temporary_path(s.step));  // as the Checkpointer does before a save
    checkpoint::write_process_part(dir, s, layout, 0);
    checkpoint::commit(dir, s, layout, 1, std::chrono::seconds(1));
    const std::string manifest = fuzz::read_file(dir.final_path(7) / checkpoint::CheckpointDir::kManifest);
    const std::string part = fuzz::read_file(dir.final_path(7) / "part-00000.safetensors");
    // flags 1: keep the part's size and CRC in the manifest in step
    seed("fuzz_checkpoint", "checkpoint" + std::to_string(k), fuzz::join_sections(1, {manifest, part}));
  }
}

void experiment_seeds() {
  for (const std::string& name : config::Experiment::names()) {
    seed("fuzz_experiment", name + ".json", config::Experiment::named(name).to_json().dump(2));
  }
  seed("fuzz_experiment", "inherits.json", R"({"fdl_config": ")" + config::Experiment::names().front() +
                                              R"(", "NUM_LAYERS": 3, "ICI_MESH_SHAPE": [1, 2, 1], "DATA": "synthetic"})");
  const char* overrides[] = {"--fdl.NUM_LAYERS=12",        "--fdl.LEARNING_RATE=6e-4",  "--fdl.ICI_MESH_SHAPE=[8, 1, 1]",
                             "--fdl.DCN_MESH_SHAPE=2,1,1", "--fdl.ASYNC_CHECKPOINTING=False",
                             "--fdl.DATA='text:a.txt'",    "--fdl.MAX_STEPS=1_000",     "--fdl.PERCORE_BATCH_SIZE=0.5"};
  int i = 0;
  for (const char* o : overrides) seed("fuzz_experiment", "override" + std::to_string(i++), o);
}

void tfrecord_seeds() {
  // FuzzedDataProvider input: the bytes only steer tags, values and steps.
  seed("fuzz_tfrecord", "one", std::string("loss\\\x00\x00\x00\x00\x00\x00\xf0\x3f\x01\x00\x00\x00\x00\x00\x00\x00", 21));
  std::string many;
  for (int i = 0; i < 64; ++i) many += static_cast<char>(i * 37);
  seed("fuzz_tfrecord", "many", many);
}
}  // namespace

void zero_shot_seeds() {
  seed("fuzz_zero_shot", "lambada.jsonl",
       "{\"input_ids\": [1, 2, 3], \"target_ids\": [4, 5]}\n\n{\"input_ids\": [299, 0, 7, 8, 9, 10, 11, 12, 13, 14, "
       "15, 16, 17, 18], \"target_ids\": [1, 2, 3]}\n");
  seed("fuzz_zero_shot", "boolq.jsonl",
       "{\"input_ids\": [5, 6], \"yes_ids\": [7], \"no_ids\": [8, 9], \"answer\": true}\n"
       "{\"question\": \"q\", \"passage\": \"p\", \"answer\": false}\n");
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  out_root = argv[1];
  token_shard_seeds();
  weights_seeds();
  checkpoint_seeds();
  experiment_seeds();
  tfrecord_seeds();
  hf_llama_seeds();
  ssm_metadata_seeds();
  zero_shot_seeds();
  return 0;
}
