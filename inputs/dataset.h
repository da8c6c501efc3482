// Prepared datasets (`pax-ocl data prepare`) and the inputs built on them.
//
// A dataset directory holds:
//   tokenizer.model / tokenizer.vocab   the SentencePiece model (usable with spm_encode / spm_decode)
//   train.tokens, validation.tokens     token shards (inputs/token_shard.h): documents encoded and
//                                       concatenated, each followed by the tokenizer's EOS id
//   dataset.json                        what was prepared: source, vocabulary, documents, tokens
// Packing is concat-then-split (docs/data_format.md says why): windows of MAX_SEQ_LEN cross
// document boundaries, marked by EOS, and no token is padding.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "inputs/base_input.h"
#include "inputs/corpus.h"
#include "inputs/input_params.h"

namespace paxocl::inputs {

struct PrepareOptions {
  std::filesystem::path output_dir;
  int vocab_size = 4096;
  std::string model_type = "bpe";                   // bpe | unigram
  std::optional<std::filesystem::path> spm_model;   // reuse a trained model instead
};

struct DatasetInfo {
  std::string source;
  int vocab_size = 0;
  std::size_t train_documents = 0, validation_documents = 0;
  std::uint64_t train_tokens = 0, validation_tokens = 0;
};

// Writes a dataset directory (into a temporary directory renamed into place, so a crash leaves
// no half-prepared dataset). Returns what it wrote.
DatasetInfo prepare_dataset(const Corpus& corpus, const PrepareOptions& options, const std::string& source);
DatasetInfo read_dataset_info(const std::filesystem::path& dir);  // DataError when not a dataset

// Where prepared corpora are cached: $PAX_OCL_DATA_DIR, else $XDG_CACHE_HOME/pax-ocl/data, else
// ~/.cache/pax-ocl/data.
std::filesystem::path default_data_root();
// The KJV prepared for this vocabulary and model type under `root`, preparing it on first use.
std::filesystem::path prepared_kjv(const std::filesystem::path& root, int vocab_size, const std::string& model_type);

// The input for `source`, split "train" or "validation":
//   "synthetic"          the synthetic stream (90% train, 10% validation)
//   "kjv"                the KJV, prepared on first use under default_data_root()
//   a directory          a `pax-ocl data prepare` dataset
//   "text:FILE[,FILE]"   raw text tokenised on the fly with params.tokenizer_model (documents and
//                        the validation hold-out as `data prepare --text` makes them)
//   anything else        token shard files (comma-separated list and/or glob patterns)
// Token ids are checked against `vocab_size`, and a tokenizer must have exactly `vocab_size`
// pieces. Wrapped in a prefetch thread when params.prefetch_depth > 0.
std::unique_ptr<BaseInput> make_input(const std::string& source, const std::string& split, const InputParams& params,
                                      int vocab_size);

}  // namespace paxocl::inputs
