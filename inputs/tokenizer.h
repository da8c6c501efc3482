// Tokenizer: a SentencePiece model (libsentencepiece), the same .model file the standard
// spm_encode / spm_decode tools read. train_tokenizer() runs libsentencepiece's trainer.
// libsentencepiece is reached through the libpaxocl_spm bridge in its own symbol scope (see
// inputs/spm_bridge.cpp for why).
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace paxocl::inputs {

class Tokenizer {
 public:
  explicit Tokenizer(const std::filesystem::path& model);  // DataError when unreadable or not a model
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;

  int vocab_size() const;
  int eos_id() const;  // the document separator written between documents
  // Whether pieces never span whitespace (TrainerSpec.split_by_whitespace, SentencePiece's default
  // and every model `pax-ocl data` trains): a text's words then encode alone.
  bool splits_at_whitespace() const;
  std::vector<int> encode(std::string_view text) const;
  std::string decode(std::span<const int> ids) const;

 private:
  void* sp_ = nullptr;  // the bridge's processor handle
  std::filesystem::path path_;
};

// Trains a model on the lines of `text_file` into `<model_prefix>.model` / `.vocab`.
// model_type: "bpe" or "unigram". Throws DataError with SentencePiece's reason on failure (e.g. a
// vocabulary larger than the text supports).
void train_tokenizer(const std::filesystem::path& text_file, const std::filesystem::path& model_prefix,
                     int vocab_size, const std::string& model_type);

}  // namespace paxocl::inputs
