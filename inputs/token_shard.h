// Token shard files: on-disk token streams. Two formats are read, told apart by their first bytes:
//
// pax-ocl's own (written by `pax-ocl data prepare`), little-endian, documented in docs/data_format.md:
//   offset  0  char[8]  magic "PAXTOKEN"
//           8  uint32   format version (1)
//          12  uint32   bytes per token: 2 (uint16) or 4 (uint32)
//          16  uint64   token count
//          24  uint32   vocabulary size of the tokenizer that wrote it (0: unknown)
//          28  uint32   reserved, 0
//          32  tokens   count * bytes-per-token
// llm.c's (dev/data/data_common.py write_datafile; llmc/dataloader.h reads them):
//   offset  0  int32[256] header: [0] magic, [1] version, [2] token count, the rest 0
//        1024  tokens     count * bytes-per-token
//   magic 20240520 version 1: uint16 tokens (GPT-2's tokenizer, llm.c's default);
//   magic 20240801 version 7: uint32 tokens (LLaMA 3's tokenizer). No vocabulary is recorded.
// A shard is memory-mapped read-only; opening validates the header, that the count is exactly
// (file size - header) / width (never computed as header + count * width, which a hostile count
// wraps) and that every token is below the vocabulary size given (the model's VOCAB_SIZE).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace paxocl::inputs {

inline constexpr char kShardMagic[8] = {'P', 'A', 'X', 'T', 'O', 'K', 'E', 'N'};
inline constexpr std::uint32_t kShardVersion = 1;
inline constexpr std::size_t kShardHeaderBytes = 32;

// llm.c's token files: the header is 256 int32s; a magic selects the version and token width.
inline constexpr std::size_t kLlmcHeaderInts = 256;
inline constexpr std::size_t kLlmcHeaderBytes = kLlmcHeaderInts * 4;
struct LlmcFormat {
  std::int32_t magic;
  std::int32_t version;
  std::uint32_t bytes_per_token;
  const char* tokenizer;       // whose token ids llm.c writes in this format (for messages)
  std::uint32_t tokenizer_vocab;
};
inline constexpr LlmcFormat kLlmcGpt2{20240520, 1, 2, "GPT-2", 50257};
inline constexpr LlmcFormat kLlmcLlama3{20240801, 7, 4, "LLaMA 3", 128256};
inline constexpr LlmcFormat kLlmcFormats[] = {kLlmcGpt2, kLlmcLlama3};

class TokenShard {
 public:
  // Maps `file` (either format); throws DataError (one line: the file and what is wrong) when it is
  // missing, empty, truncated, of another format or version, or holds a token >= max_vocab (if
  // max_vocab > 0).
  TokenShard(const std::filesystem::path& file, std::uint32_t max_vocab);
  ~TokenShard();
  TokenShard(const TokenShard&) = delete;
  TokenShard& operator=(const TokenShard&) = delete;

  std::size_t size() const { return count_; }
  std::uint32_t vocab_size() const { return vocab_size_; }  // 0: not recorded (always so for llm.c)
  const LlmcFormat* llmc_format() const { return llmc_; }  // nullptr for a pax-ocl shard
  std::uint32_t operator[](std::size_t i) const {
    return bytes_per_token_ == 2 ? reinterpret_cast<const std::uint16_t*>(data_)[i]
                                 : reinterpret_cast<const std::uint32_t*>(data_)[i];
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  void check_tokens_below(std::uint32_t max_vocab) const;  // DataError naming the first token that is not

  std::filesystem::path path_;
  void* map_ = nullptr;
  std::size_t map_bytes_ = 0;
  const unsigned char* data_ = nullptr;
  std::size_t count_ = 0;
  const LlmcFormat* llmc_ = nullptr;
  std::uint32_t bytes_per_token_ = 2, vocab_size_ = 0;
};

// Writes `tokens` as a shard (uint16 when vocab_size <= 65536, else uint32) through an AtomicFile
// (fsynced, renamed into place). DataError when a token is >= vocab_size (if vocab_size > 0) or the
// write fails; `file` is then untouched.
void write_token_shard(const std::filesystem::path& file, std::span<const std::uint32_t> tokens,
                       std::uint32_t vocab_size);

// The files a spec names: a comma-separated list of paths and glob patterns, each pattern
// expanded in sorted order. Throws DataError when a name or pattern matches nothing.
std::vector<std::filesystem::path> expand_shard_spec(const std::string& spec);

}  // namespace paxocl::inputs
