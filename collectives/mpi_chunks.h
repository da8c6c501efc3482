// How one collective over more elements than MPI can count is issued as several MPI calls. MPI
// takes element counts and displacements as int, so a call may carry at most INT_MAX elements
// (a gradient of 2^31 floats is only 8 GiB). These pure functions plan the calls; MpiCommunicator
// issues one MPI call per chunk, in order. Every member derives the same plan from the same
// group-wide sizes, so the calls match across the group; an operation that fits in one call is
// planned as exactly that call (the same call, and results, as without chunking).
#pragma once

#include <climits>
#include <cstddef>
#include <vector>

namespace paxocl::collectives::mpi_chunks {

inline constexpr std::size_t kMaxCount = INT_MAX;  // the most elements one MPI call can count

struct Range {
  std::size_t begin = 0, end = 0;
  bool operator==(const Range&) const = default;
};

// [0, n) cut into consecutive ranges of at most `limit` elements (1 <= limit <= kMaxCount); none
// when n == 0. For the collectives whose members all pass the same count (all-reduce, broadcast).
std::vector<Range> windows(std::size_t n, std::size_t limit);

// One call of a v-collective (MPI_Iallgatherv, MPI_Ireduce_scatter) on a buffer made of the
// members' shards in order: the call covers `window` of the whole buffer, and member i's part of
// it is counts[i] elements at window.begin + displacements[i]. Both fit in int, and so does
// their sum (the window is at most `limit` long).
struct VChunk {
  Range window;
  std::vector<int> counts, displacements;  // per member
};

// The buffer [0, sum of shard_counts) cut into windows of at most `limit` elements, each with
// every member's part (possibly empty). Member i's parts, concatenated over the chunks, are its
// shard exactly, in order. Shards may exceed INT_MAX themselves.
std::vector<VChunk> v_chunks(const std::vector<std::size_t>& shard_counts, std::size_t limit);

}  // namespace paxocl::collectives::mpi_chunks
