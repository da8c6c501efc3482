#include "inputs/token_stream.h"

#include <algorithm>

namespace paxocl::inputs {

TokenStream TokenStream::from_tokens(std::vector<std::uint32_t> tokens) {
  TokenStream s;
  s.size_ = tokens.size();
  s.memory_ = std::move(tokens);
  return s;
}

TokenStream TokenStream::from_shards(const std::vector<std::filesystem::path>& files, std::uint32_t max_vocab) {
  TokenStream s;
  for (const auto& f : files) {
    s.shards_.push_back(std::make_shared<TokenShard>(f, max_vocab));
    s.shard_starts_.push_back(s.size_);
    s.size_ += s.shards_.back()->size();
  }
  return s;
}

void TokenStream::copy_window(std::size_t start, std::size_t count, std::vector<int>& out) const {
  if (shards_.empty()) {
    for (std::size_t i = 0; i < count; ++i) out.push_back(static_cast<int>(memory_[start + i]));
    return;
  }
  // The shard holding `start`, then walk forward across shard boundaries.
  std::size_t s = static_cast<std::size_t>(std::upper_bound(shard_starts_.begin(), shard_starts_.end(), start) -
                                           shard_starts_.begin()) - 1;
  std::size_t at = start - shard_starts_[s];
  for (std::size_t i = 0; i < count; ++i) {
    while (at >= shards_[s]->size()) {
      ++s;
      at = 0;
    }
    out.push_back(static_cast<int>((*shards_[s])[at++]));
  }
}

}  // namespace paxocl::inputs
