#include "inputs/token_shard.h"

#include <glob.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/regular_file.h"
#include "common/unique_fd.h"

namespace paxocl::inputs {

static_assert(std::endian::native == std::endian::little, "token shards are little-endian");

namespace {
[[noreturn]] void fail(const std::filesystem::path& file, const std::string& what) {
  throw DataError(fmt::format("token shard {}: {}", file.string(), what));
}
}  // namespace

namespace {

// The header's fields, whichever format wrote it.
struct ShardHeader {
  std::size_t header_bytes = 0;
  std::uint32_t bytes_per_token = 0;
  std::uint64_t count = 0;
  std::uint32_t vocab_size = 0;
  const LlmcFormat* llmc = nullptr;
};

const LlmcFormat* llmc_format_of(std::int32_t magic) {
  for (const LlmcFormat& f : kLlmcFormats) {
    if (f.magic == magic) return &f;
  }
  return nullptr;
}

std::string too_short(std::size_t file_bytes, std::size_t header_bytes, const char* whose) {
  return fmt::format("{} bytes, shorter than the {}-byte {}header (truncated?)", file_bytes, header_bytes, whose);
}

// Reads and checks the header of a mapped file of file_bytes > 0 bytes; fails with the reason.
ShardHeader read_header(const std::filesystem::path& file, const unsigned char* bytes, std::size_t file_bytes) {
  ShardHeader h;
  std::int32_t first = 0;
  if (file_bytes >= 4) std::memcpy(&first, bytes, 4);
  if (file_bytes >= sizeof kShardMagic && std::memcmp(bytes, kShardMagic, sizeof kShardMagic) == 0) {
    if (file_bytes < kShardHeaderBytes) fail(file, too_short(file_bytes, kShardHeaderBytes, ""));
    std::uint32_t version = 0;
    std::memcpy(&version, bytes + 8, 4);
    std::memcpy(&h.bytes_per_token, bytes + 12, 4);
    std::memcpy(&h.count, bytes + 16, 8);
    std::memcpy(&h.vocab_size, bytes + 24, 4);
    if (version != kShardVersion) {
      fail(file, fmt::format("format version {} is not supported (this build reads version {})", version, kShardVersion));
    }
    if (h.bytes_per_token != 2 && h.bytes_per_token != 4) {
      fail(file, fmt::format("token width {} bytes is not 2 or 4", h.bytes_per_token));
    }
    h.header_bytes = kShardHeaderBytes;
  } else if (const LlmcFormat* llmc = file_bytes >= 4 ? llmc_format_of(first) : nullptr) {
    if (file_bytes < kLlmcHeaderBytes) fail(file, too_short(file_bytes, kLlmcHeaderBytes, "llm.c "));
    std::int32_t version = 0, count = 0;
    std::memcpy(&version, bytes + 4, 4);
    std::memcpy(&count, bytes + 8, 4);
    if (version != llmc->version) {
      fail(file, fmt::format("llm.c format version {} is not supported (magic {} goes with version {})", version,
                             llmc->magic, llmc->version));
    }
    if (count < 0) fail(file, fmt::format("llm.c header's token count {} is negative (corrupt header)", count));
    h = {kLlmcHeaderBytes, llmc->bytes_per_token, static_cast<std::uint64_t>(count), 0, llmc};
  } else if (file_bytes < kShardHeaderBytes) {
    fail(file, too_short(file_bytes, kShardHeaderBytes, ""));
  } else {
    fail(file, fmt::format("neither a pax-ocl token shard (magic PAXTOKEN) nor an llm.c token file (int32 magic {} or {}): "
                           "bad magic",
                           kLlmcGpt2.magic, kLlmcLlama3.magic));
  }
  // The header's count must be exactly what the file holds. Computed from the file's size, never as
  // header + count * width, which wraps for a hostile count near 2^64 / width and would let the
  // scan of the tokens read far past the mapping.
  const std::uint64_t payload = file_bytes - h.header_bytes;
  const std::uint64_t held = payload / h.bytes_per_token;
  if (h.count != held || payload % h.bytes_per_token != 0) {
    const bool fits = h.count <= (std::numeric_limits<std::uint64_t>::max() - h.header_bytes) / h.bytes_per_token;
    const std::string needed = fits ? fmt::format("{} bytes", h.header_bytes + h.count * h.bytes_per_token) : "more than 2^64 bytes";
    fail(file, fmt::format("{} bytes, but the header's {} tokens of {} bytes need {} ({}); {}", file_bytes, h.count,
                           h.bytes_per_token, needed, h.count > held ? "truncated or a corrupt header" : "trailing bytes",
                           h.llmc != nullptr ? "re-run llm.c's data script" : "re-run `pax-ocl data prepare`"));
  }
  if (h.count == 0) fail(file, "holds no tokens");
  return h;
}

}  // namespace

TokenShard::TokenShard(const std::filesystem::path& file, std::uint32_t max_vocab) : path_(file) {
  const OpenedFile opened = open_regular_file(file);
  if (!opened.fd.valid()) fail(file, fmt::format("{}; check the path or run `pax-ocl data prepare`", opened.refused));
  const UniqueFd& fd = opened.fd;
  const auto file_bytes = static_cast<std::size_t>(opened.size);
  if (file_bytes == 0) fail(file, "empty file");
  map_ = ::mmap(nullptr, file_bytes, PROT_READ, MAP_PRIVATE, fd.get(), 0);  // the mapping outlives the descriptor
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    fail(file, fmt::format("mmap failed ({})", std::strerror(errno)));
  }
  map_bytes_ = file_bytes;
  try {
    const auto* bytes = static_cast<const unsigned char*>(map_);
    const ShardHeader h = read_header(file, bytes, file_bytes);
    data_ = bytes + h.header_bytes;
    count_ = static_cast<std::size_t>(h.count);
    bytes_per_token_ = h.bytes_per_token;
    vocab_size_ = h.vocab_size;
    llmc_ = h.llmc;
    if (max_vocab > 0) check_tokens_below(max_vocab);
  } catch (...) {  // the destructor does not run for a throwing constructor
    ::munmap(map_, map_bytes_);
    map_ = nullptr;
    throw;
  }
}

void TokenShard::check_tokens_below(std::uint32_t max_vocab) const {
  for (std::size_t i = 0; i < count_; ++i) {
    const std::uint32_t token = (*this)[i];
    if (token < max_vocab) continue;
    const std::string origin =
        llmc_ != nullptr ? fmt::format("llm.c {} format, which records no vocabulary; {}'s tokenizer has {} ids", llmc_->tokenizer,
                                       llmc_->tokenizer, llmc_->tokenizer_vocab)
                         : fmt::format("shard vocabulary: {}", vocab_size_);
    fail(path_, fmt::format("token {} at position {} is >= VOCAB_SIZE={}; the tokenizer that wrote it does not match the "
                            "model ({})",
                            token, i, max_vocab, origin));
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
