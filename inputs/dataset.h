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
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

// Writes a dataset directory: built in a fresh sibling `DIR.tmp.XXXXXX`, every file fsynced, then
// swapped in (an existing dataset is renamed aside to `DIR.old.XXXXXX`, the new one renamed in,
// the old one deleted), so a crash or a full disk never leaves a half-prepared dataset under DIR.
// Throws ConfigError, touching nothing, when DIR exists and is not a dataset (a directory holding
// dataset.json): a user's directory is never wiped. Preparations of one DIR are serialised by an
// flock on `DIR.lock` (left in place), so concurrent processes each install a whole dataset.
// Under the lock, what a killed run left is tidied: `DIR.tmp.*` deleted, and a `DIR.old.*`
// dataset renamed back when DIR is missing (killed between the two renames). Returns what it wrote.
DatasetInfo prepare_dataset(const Corpus& corpus, const PrepareOptions& options, const std::string& source);
DatasetInfo read_dataset_info(const std::filesystem::path& dir);  // DataError when not a dataset

// Prepares options.output_dir from read_corpus() unless it is a dataset already. Of several
// processes calling this at once for one directory (the ranks of a job, or independent jobs
// sharing a cache), one prepares and the others wait on `DIR.lock`, then reuse its dataset.
// Returns true when this call prepared it.
bool ensure_dataset(const PrepareOptions& options, const std::function<Corpus()>& read_corpus, const std::string& source);

// Where prepared corpora are cached: $PAX_OCL_DATA_DIR, else $XDG_CACHE_HOME/pax-ocl/data, else
// ~/.cache/pax-ocl/data.
std::filesystem::path default_data_root();
// The KJV prepared for this vocabulary and model type under `root` (ensure_dataset: prepared on
// first use, once, whoever else asks at the same time).
std::filesystem::path prepared_kjv(const std::filesystem::path& root, int vocab_size, const std::string& model_type);

// A directory of llm.c token files, as llm.c's dev/data scripts leave them: the files of `split`
// in name order, `*_train*.bin` for "train" and `*_val*.bin` for "validation"
// (tinyshakespeare_train.bin, fineweb_val_000000.bin, fineweb_train_000001.bin, ...). Empty when
// the directory has none. Hidden files are skipped, as glob skips them.
// The SentencePiece model that reads and writes the text of a DATA source (make_input's forms
// below): the KJV's (prepared on first use), a prepared dataset directory's, `tokenizer` for
// "text:FILES"; none for synthetic data, llm.c files and token shards.
std::optional<std::filesystem::path> tokenizer_of(const std::string& source, int vocab_size, const std::string& tokenizer);

std::vector<std::filesystem::path> llmc_split_files(const std::filesystem::path& dir, const std::string& split);

// The input for `source`, split "train" or "validation":
//   "synthetic"          the synthetic stream (90% train, 10% validation)
//   "kjv"                the KJV, prepared on first use under default_data_root()
//   a directory          a `pax-ocl data prepare` dataset (it holds dataset.json), else a directory
//                        of llm.c token files (llmc_split_files; DataError when a split has none)
//   "text:FILE[,FILE]"   raw text tokenised on the fly with params.tokenizer_model (documents and
//                        the validation hold-out as `data prepare --text` makes them)
//   anything else        token shard files (comma-separated list and/or glob patterns)
// Token ids are checked against `vocab_size`, and a tokenizer must have exactly `vocab_size`
// pieces. Wrapped in a prefetch thread when params.prefetch_depth > 0.
std::unique_ptr<BaseInput> make_input(const std::string& source, const std::string& split, const InputParams& params,
                                      int vocab_size);

}  // namespace paxocl::inputs
