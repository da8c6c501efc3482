// Fuzzes the Hugging Face LLaMA reader (models/hf_llama_io.h) through its public entry points,
// is_hf_llama_checkpoint and load_hf_llama: the input is split (fuzz/hf_llama_input.h) into
// config.json, model.safetensors.index.json and two shards, written into a checkpoint directory of
// the scratch directory, beside which lies outside.safetensors, a copy of shard 2 that an index
// entry "../outside.safetensors" would reach. A checkpoint loads or is refused with a documented
// error (an index entry leaving the directory, naming a missing file, a tensor in two shards, ...).
// Properties: the reader opens no file outside the checkpoint directory (fuzz/open_log.h); a model
// that loads has weights filling its layout, and survives save_hf_llama + load_hf_llama with the
// same config and the same weights bit for bit.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include "common/errors.h"
#include "fuzz/fuzz_support.h"
#include "fuzz/hf_llama_input.h"
#include "fuzz/open_log.h"
#include "models/hf_llama_io.h"
#include "models/parameter_layout.h"

using namespace paxocl;
namespace fs = std::filesystem;
namespace hf_input = fuzz::hf_llama_input;

namespace {

bool inside(const fs::path& dir, const fs::path& file) {
  const fs::path rel = file.lexically_normal().lexically_relative(dir.lexically_normal());
  return !rel.empty() && *rel.begin() != ".." && rel != ".";
}

bool same_config(const models::LlamaConfig& a, const models::LlamaConfig& b) {
  return a.num_layers == b.num_layers && a.model_dims == b.model_dims && a.hidden_dims == b.hidden_dims &&
         a.num_heads == b.num_heads && a.num_kv_heads == b.num_kv_heads && a.dims_per_head == b.dims_per_head &&
         a.max_seq_len == b.max_seq_len && a.vocab_size == b.vocab_size && a.padded_vocab() == b.padded_vocab() &&
         a.init_std == b.init_std && a.rope_base == b.rope_base && a.norm_epsilon == b.norm_epsilon;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fuzz::Sections in = fuzz::split_sections(data, size, hf_input::kSections);
  const fs::path dir = fuzz::scratch_dir() / "checkpoint";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (std::size_t i = 0; i < hf_input::kSections; ++i) {
    if (i == hf_input::kIndex && (in.flags & hf_input::kNoIndex) != 0) continue;
    fuzz::write_file(dir / hf_input::kFiles[i], in.parts[i]);
  }
  if ((in.flags & hf_input::kSingleFile) != 0) fuzz::write_file(dir / "model.safetensors", in.parts[hf_input::kShard1]);
  fuzz::write_file(fuzz::scratch_dir() / "outside.safetensors", in.parts[hf_input::kShard2]);
  const fs::path path = (in.flags & hf_input::kLoadFile) != 0 ? dir / hf_input::kFiles[hf_input::kShard1] : dir;
  const std::size_t alignment = (in.flags & hf_input::kAligned) != 0 ? 16 : 1;

  (void)fuzz::take_opened_paths();
  (void)models::is_hf_llama_checkpoint(path);  // a predicate: throws nothing
  std::optional<models::HostWeights> w;
  try {
    w = models::load_hf_llama(path, alignment);
  } catch (const DataError&) {
  } catch (const ConfigError&) {
  }
  bool saw_config = false;
  for (const fs::path& opened : fuzz::take_opened_paths()) {
    if (!inside(dir, opened)) fuzz::require(false, "the reader opened " + opened.string() + ", outside the checkpoint");
    saw_config = saw_config || opened.filename() == hf_input::kFiles[hf_input::kConfig];
  }
  if (!w) return 0;
  fuzz::require(saw_config, "the open(2) record missed config.json: is the target linked with --wrap=open?");
  fuzz::require(w->data.size() == models::ParameterLayout(w->config, w->alignment).total(),
                "loaded weights do not fill the layout of their config");

  const fs::path copy = fuzz::scratch_dir() / "resaved";
  fs::remove_all(copy);
  models::save_hf_llama(copy, *w);  // anything this loads must save
  const models::HostWeights again = models::load_hf_llama(copy, alignment);
  fuzz::require(same_config(again.config.llama(), w->config.llama()), "the config changed in a save + load round trip");
  fuzz::require(again.data.size() == w->data.size() &&
                    std::memcmp(again.data.data(), w->data.data(), w->data.size() * sizeof(float)) == 0,
                "weights changed in a save + load round trip");
  return 0;
}
