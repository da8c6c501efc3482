#include "collectives/mpi_chunks.h"

#include <algorithm>

#include "common/errors.h"

namespace paxocl::collectives::mpi_chunks {

namespace {
void check_limit(std::size_t limit) {
  if (limit == 0 || limit > kMaxCount) throw ConfigError("an MPI chunk limit must be in [1, INT_MAX]");
}
}  // namespace

std::vector<Range> windows(std::size_t n, std::size_t limit) {
  check_limit(limit);
  std::vector<Range> out;
  for (std::size_t begin = 0; begin < n; begin += std::min(limit, n - begin)) {
    out.push_back({begin, begin + std::min(limit, n - begin)});
  }
  return out;
}

std::vector<VChunk> v_chunks(const std::vector<std::size_t>& shard_counts, std::size_t limit) {
  std::size_t n = 0;
  for (std::size_t c : shard_counts) n += c;
  std::vector<VChunk> out;
  for (const Range& w : windows(n, limit)) {
    VChunk chunk{w, {}, {}};
    std::size_t shard_begin = 0;
    for (std::size_t c : shard_counts) {  // each member's shard [shard_begin, shard_begin + c) clipped to w
      const std::size_t begin = std::clamp(shard_begin, w.begin, w.end);
      const std::size_t end = std::clamp(shard_begin + c, w.begin, w.end);
      chunk.counts.push_back(static_cast<int>(end - begin));  // <= limit <= INT_MAX
      chunk.displacements.push_back(static_cast<int>(begin - w.begin));
      shard_begin += c;
    }
    out.push_back(std::move(chunk));
  }
  return out;
}

}  // namespace paxocl::collectives::mpi_chunks
