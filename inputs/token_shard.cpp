#include "inputs/token_shard.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/unique_fd.h"

namespace paxocl::inputs {

static_assert(std::endian::native == std::endian::little, "token shards are little-endian");

namespace {
[[noreturn]] void fail(const std::filesystem::path& file, const std::string& what) {
  throw DataError(fmt::format("token shard {}: {}", file.string(), what));
}
}  // namespace

TokenShard::TokenShard(const std::filesystem::path& file, std::uint32_t max_vocab) : path_(file) {
  const UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) fail(file, fmt::format("cannot open ({}); check the path or run `pax-ocl data prepare`", std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) fail(file, "not a regular file");
  const auto file_bytes = static_cast<std::size_t>(st.st_size);
  if (file_bytes < kShardHeaderBytes) {
    fail(file, file_bytes == 0 ? "empty file" : fmt::format("{} bytes, shorter than the {}-byte header (truncated?)", file_bytes, kShardHeaderBytes));
  }
  map_ = ::mmap(nullptr, file_bytes, PROT_READ, MAP_PRIVATE, fd.get(), 0);  // the mapping outlives the descriptor
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    fail(file, fmt::format("mmap failed ({})", std::strerror(errno)));
  }
  map_bytes_ = file_bytes;
  const auto* bytes = static_cast<const unsigned char*>(map_);
  std::uint32_t version = 0;
  std::uint64_t count = 0;
  std::memcpy(&version, bytes + 8, 4);
  std::memcpy(&bytes_per_token_, bytes + 12, 4);
  std::memcpy(&count, bytes + 16, 8);
  std::memcpy(&vocab_size_, bytes + 24, 4);
  auto close_and_fail = [&](const std::string& what) {
    ::munmap(map_, map_bytes_);
    map_ = nullptr;
    fail(file, what);
  };
  if (std::memcmp(bytes, kShardMagic, sizeof kShardMagic) != 0) close_and_fail("not a pax-ocl token shard (bad magic)");
  if (version != kShardVersion) {
    close_and_fail(fmt::format("format version {} is not supported (this build reads version {})", version, kShardVersion));
  }
  if (bytes_per_token_ != 2 && bytes_per_token_ != 4) {
    close_and_fail(fmt::format("token width {} bytes is not 2 or 4", bytes_per_token_));
  }
  // The header's count must be exactly what the file holds. Computed from the file's size, never as
  // 32 + count * width, which wraps for a hostile count near 2^64 / width and would let the scan
  // below read far past the mapping.
  const std::uint64_t payload = file_bytes - kShardHeaderBytes;
  const std::uint64_t held = payload / bytes_per_token_;
  if (count != held || payload % bytes_per_token_ != 0) {
    const bool fits = count <= (std::numeric_limits<std::uint64_t>::max() - kShardHeaderBytes) / bytes_per_token_;
    const std::string needed = fits ? fmt::format("{} bytes", kShardHeaderBytes + count * bytes_per_token_) : "more than 2^64 bytes";
    close_and_fail(fmt::format("{} bytes, but the header's {} tokens of {} bytes need {} ({}); re-run `pax-ocl data prepare`",
                               file_bytes, count, bytes_per_token_, needed,
                               count > held ? "truncated or a corrupt header" : "trailing bytes"));
  }
  if (count == 0) close_and_fail("holds no tokens");
  data_ = bytes + kShardHeaderBytes;
  count_ = static_cast<std::size_t>(count);
  if (max_vocab > 0) {
    for (std::size_t i = 0; i < count_; ++i) {
      if ((*this)[i] >= max_vocab) {
        const std::uint32_t bad = (*this)[i];
        close_and_fail(fmt::format("token {} at position {} is >= VOCAB_SIZE={}; the tokenizer that wrote it does not "
                                   "match the model (shard vocabulary: {})",
                                   bad, i, max_vocab, vocab_size_));
      }
    }
  }
}

TokenShard::~TokenShard() {
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
}

void write_token_shard(const std::filesystem::path& file, std::span<const std::uint32_t> tokens, std::uint32_t vocab_size) {
  const std::uint32_t width = vocab_size > 0 && vocab_size <= 65536 ? 2 : 4;
  std::string header(kShardMagic, sizeof kShardMagic);
  auto put = [&](std::string& out, auto v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(header, kShardVersion);
  put(header, width);
  put(header, static_cast<std::uint64_t>(tokens.size()));
  put(header, vocab_size);
  put(header, std::uint32_t{0});
  AtomicFile out(file);
  out.write(header);
  std::string chunk;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (vocab_size > 0 && tokens[i] >= vocab_size) {  // would be truncated to 16 bits, or fail every reader
      throw DataError(fmt::format("token shard {}: token {} at position {} is >= the vocabulary size {}", file.string(),
                                  tokens[i], i, vocab_size));
    }
    if (width == 2) {
      put(chunk, static_cast<std::uint16_t>(tokens[i]));
    } else {
      put(chunk, tokens[i]);
    }
    if (chunk.size() >= (1u << 20)) {
      out.write(chunk);
      chunk.clear();
    }
  }
  out.write(chunk);
  out.commit();
}

std::vector<std::filesystem::path> expand_shard_spec(const std::string& spec) {
  std::vector<std::filesystem::path> files;
  std::size_t start = 0;
  while (start <= spec.size()) {
    const std::size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string item = spec.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) continue;
    glob_t g{};
    const int rc = ::glob(item.c_str(), 0, nullptr, &g);
    if (rc == 0) {
      for (std::size_t i = 0; i < g.gl_pathc; ++i) files.emplace_back(g.gl_pathv[i]);  // glob sorts
    }
    ::globfree(&g);
    if (rc != 0) throw DataError(fmt::format("token shards '{}': no such file", item));
  }
  if (files.empty()) throw DataError(fmt::format("token shards '{}': no files named", spec));
  return files;
}

}  // namespace paxocl::inputs
