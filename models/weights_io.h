// Weight files: a model's parameters on the host, read from and written to two formats.
//
// llm.c checkpoint (gpt2_124M.bin, as written by llm.c's train_gpt2.py, version 3 = fp32):
//   256 little-endian int32 header: [0]=20240326 [1]=3 [2]=maxT [3]=V [4]=L [5]=NH [6]=C [7]=Vp,
//   the rest 0; then fp32 tensors in this order, per-layer tensors stacked over layers:
//   wte (Vp, C)  wpe (maxT, C)  ln1w (L, C)  ln1b (L, C)  qkvw (L, 3C, C)  qkvb (L, 3C)
//   attprojw (L, C, C)  attprojb (L, C)  ln2w (L, C)  ln2b (L, C)  fcw (L, 4C, C)  fcb (L, 4C)
//   fcprojw (L, C, 4C)  fcprojb (L, C)  lnfw (C)  lnfb (C).
//   The file carries wte's padding rows V..Vp-1; they round-trip unchanged.
//
// safetensors with Hugging Face GPT-2 names ("transformer." prefix; files without it, as saved
// from GPT2Model, load too): wte.weight (V, C), wpe.weight (maxT, C), h.{l}.ln_1/ln_2 .weight and
// .bias (C), h.{l}.attn.c_attn .weight (C, 3C) .bias (3C), h.{l}.attn.c_proj .weight (C, C) .bias (C),
// h.{l}.mlp.c_fc .weight (C, H) .bias (H), h.{l}.mlp.c_proj .weight (H, C) .bias (C),
// ln_f.weight/.bias (C). HF's Conv1D stores those four weights as (in, out), the transpose of our
// (out, in), so they are transposed on load and on save. Only wte's first V rows are stored: on
// load the padding rows are zero, on save they are dropped. F32 only.
//
// Every problem with a file's contents or reading it throws FileError (common/errors.h), one line naming the
// file, what is wrong and, where possible, how to fix it (a failed write: DataError, common/atomic_file.h).
// Sizes are taken from a header only after the file is known to hold them. A HostWeights whose config the format cannot
// express, or a NUM_HEADS that does not fit the file, throws ConfigError. Writes are atomic: the
// file appears complete under its name or not at all.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "common/errors.h"
#include "models/model_config.h"

namespace paxocl::models {

struct HostWeights {
  ModelConfig config;         // the formats below hold GPTs (a ConfigError for another architecture)
  std::size_t alignment = 1;  // floats; data is indexed by ParameterLayout(config, alignment)
  std::vector<float> data;    // ParameterLayout::total() floats, alignment gaps zero
};

// Config from the header: HIDDEN_DIMS=4C, NUM_HEADS=NH, DIMS_PER_HEAD=C/NH, padded vocab Vp.
HostWeights load_llmc(const std::filesystem::path& file, std::size_t alignment);
// Requires HIDDEN_DIMS == 4 * MODEL_DIMS and NUM_HEADS * DIMS_PER_HEAD == MODEL_DIMS (ConfigError).
void save_llmc(const std::filesystem::path& file, const HostWeights& w);

// L, C, V, MAX_SEQ_LEN and HIDDEN_DIMS come from the tensors' shapes; the head count, head width
// and padded vocabulary from what the file records (gpt_file_settings.h: pax-ocl's __metadata__, or
// a Hugging Face config.json beside it), else from `num_heads` (the user's NUM_HEADS; the padded
// vocab then the default rounding). `num_heads` contradicting the file's record, or missing where
// the file records none, is a ConfigError. Extra tensors (the tied lm_head.weight,
// attn.bias/masked_bias buffers) are ignored but must still be well-formed.
HostWeights load_safetensors(const std::filesystem::path& file, std::optional<int> num_heads, std::size_t alignment);
// Writes the tensors in one fixed order with contiguous data, "__metadata__" with "format": "pt" and
// every setting of the GPT (gpt_settings_metadata), and the JSON header space-padded to a multiple
// of 8 bytes, so equal weights give identical files.
// Requires NUM_HEADS * DIMS_PER_HEAD == MODEL_DIMS (ConfigError).
void save_safetensors(const std::filesystem::path& file, const HostWeights& w);

// By path: a Hugging Face LLaMA checkpoint (a directory with config.json, or a .safetensors file with
// a LLaMA config.json beside it: models/hf_llama_io.h); else *.safetensors is GPT-2 safetensors
// (`num_heads` as load_safetensors takes it), anything else an llm.c checkpoint (its header records
// NUM_HEADS: a `num_heads` that contradicts it is a ConfigError).
HostWeights load_weights_file(const std::filesystem::path& file, std::optional<int> num_heads, std::size_t alignment);

// What save_weights_file writes, by the model and the path's suffix:
//   GPT   FILE.safetensors  Hugging Face GPT-2 safetensors (save_safetensors), the file alone
//   GPT   anything else     an llm.c checkpoint (save_llmc; FILE.bin by convention)
//   LLaMA FILE.safetensors  Hugging Face LLaMA tensors, and config.json beside the file (hf_llama_io.h)
//   LLaMA FILE.bin          refused: the llm.c format has no LLaMA
//   LLaMA anything else     a directory holding config.json and model.safetensors
// check_weights_destination checks that before any work (train checks --save_weights at start-up):
// the format can hold the model (ConfigError with the format's own message: SSM blocks, llm.c's
// HIDDEN_DIMS=4C, ...) and the place can be written (the file's directory, or a LLaMA directory's
// parent, exists and is writable; a file name is not a directory). Messages
// start with "--FLAG=PATH: " (`flag` empty: the path alone). `created_first`: a directory the caller
// creates before it writes (train's job directory; empty: none): the file may go there. save_weights_file
// runs the check first.
void check_weights_destination(const std::filesystem::path& file, const ModelConfig& model, std::string_view flag,
                               const std::filesystem::path& created_first);
void save_weights_file(const std::filesystem::path& file, const HostWeights& w);

}  // namespace paxocl::models
