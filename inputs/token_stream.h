// TokenStream: one logical sequence of token ids, held in memory (synthetic data, freshly
// tokenised text) or spread over memory-mapped shards. Windows are read with copy_window().
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "inputs/token_shard.h"

namespace paxocl::inputs {

class TokenStream {
 public:
  static TokenStream from_tokens(std::vector<std::uint32_t> tokens);
  // Opens every shard (validated against max_vocab, as TokenShard does).
  static TokenStream from_shards(const std::vector<std::filesystem::path>& files, std::uint32_t max_vocab);

  std::size_t size() const { return size_; }
  // out[i] = token[start + i] for i < count (start + count <= size()).
  void copy_window(std::size_t start, std::size_t count, std::vector<int>& out) const;

 private:
  std::vector<std::uint32_t> memory_;
  std::vector<std::shared_ptr<TokenShard>> shards_;
  std::vector<std::size_t> shard_starts_;  // first stream index of each shard
  std::size_t size_ = 0;
};

}  // namespace paxocl::inputs
