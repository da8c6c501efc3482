#include "inputs/tokenizer.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <thread>

#include <fmt/format.h>

#include "device/errors.h"

namespace paxocl::inputs {

Tokenizer::Tokenizer(const std::filesystem::path& model)
    : sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()), path_(model) {
  if (!std::filesystem::is_regular_file(model)) {
    throw DataError(fmt::format("tokenizer {}: no such file; run `pax-ocl data prepare` or pass a SentencePiece .model",
                                model.string()));
  }
  const auto status = sp_->Load(model.string());
  if (!status.ok()) throw DataError(fmt::format("tokenizer {}: not a SentencePiece model ({})", model.string(), status.ToString()));
}

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;

int Tokenizer::vocab_size() const { return sp_->GetPieceSize(); }
int Tokenizer::eos_id() const { return sp_->eos_id(); }

std::vector<int> Tokenizer::encode(std::string_view text) const {
  std::vector<int> ids;
  const auto status = sp_->Encode(text, &ids);
  if (!status.ok()) throw DataError(fmt::format("tokenizer {}: encoding failed ({})", path_.string(), status.ToString()));
  return ids;
}

std::string Tokenizer::decode(std::span<const int> ids) const {
  std::string text;
  const auto status = sp_->Decode(std::vector<int>(ids.begin(), ids.end()), &text);
  if (!status.ok()) throw DataError(fmt::format("tokenizer {}: decoding failed ({})", path_.string(), status.ToString()));
  return text;
}

void train_tokenizer(const std::filesystem::path& text_file, const std::filesystem::path& model_prefix, int vocab_size,
                     const std::string& model_type) {
  if (model_type != "bpe" && model_type != "unigram") {
    throw ConfigError(fmt::format("--model_type={}: use bpe or unigram", model_type));
  }
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const std::string args = fmt::format(
      "--input={} --model_prefix={} --vocab_size={} --model_type={} --character_coverage=1.0 --num_threads={} "
      "--minloglevel=2",
      text_file.string(), model_prefix.string(), vocab_size, model_type, threads);
  const auto status = sentencepiece::SentencePieceTrainer::Train(args);
  if (!status.ok()) {
    throw DataError(fmt::format("SentencePiece training on {} failed: {}", text_file.string(), status.ToString()));
  }
}

}  // namespace paxocl::inputs
