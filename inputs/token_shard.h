// Token shard files: pax-ocl's on-disk token streams (written by `pax-ocl data prepare`).
//
// Layout (little-endian), documented in docs/data_format.md:
//   offset  0  char[8]  magic "PAXTOKEN"
//           8  uint32   format version (1)
//          12  uint32   bytes per token: 2 (uint16) or 4 (uint32)
//          16  uint64   token count
//          24  uint32   vocabulary size of the tokenizer that wrote it (0: unknown)
//          28  uint32   reserved, 0
//          32  tokens   count * bytes-per-token
// A shard is memory-mapped read-only; opening validates the header, that the count is exactly
// (file size - 32) / width (never computed as 32 + count * width, which a hostile count wraps) and
// that every token is below the vocabulary size given (the model's VOCAB_SIZE).
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

class TokenShard {
 public:
  // Maps `file`; throws DataError (one line: the file and what is wrong) when it is missing, empty,
  // truncated, of another format or version, or holds a token >= max_vocab (if max_vocab > 0).
  TokenShard(const std::filesystem::path& file, std::uint32_t max_vocab);
  ~TokenShard();
  TokenShard(const TokenShard&) = delete;
  TokenShard& operator=(const TokenShard&) = delete;

  std::size_t size() const { return count_; }
  std::uint32_t vocab_size() const { return vocab_size_; }
  std::uint32_t operator[](std::size_t i) const {
    return bytes_per_token_ == 2 ? reinterpret_cast<const std::uint16_t*>(data_)[i]
                                 : reinterpret_cast<const std::uint32_t*>(data_)[i];
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  void* map_ = nullptr;
  std::size_t map_bytes_ = 0;
  const unsigned char* data_ = nullptr;
  std::size_t count_ = 0;
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
