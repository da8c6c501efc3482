#include "inputs/token_shard.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "device/errors.h"

namespace paxocl::inputs {

static_assert(std::endian::native == std::endian::little, "token shards are little-endian");

namespace {
[[noreturn]] void fail(const std::filesystem::path& file, const std::string& what) {
  throw DataError(fmt::format("token shard {}: {}", file.string(), what));
}
}  // namespace

TokenShard::TokenShard(const std::filesystem::path& file, std::uint32_t max_vocab) : path_(file) {
  const int fd = ::open(file.c_str(), O_RDONLY);
  if (fd < 0) fail(file, fmt::format("cannot open ({}); check the path or run `pax-ocl data prepare`", std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(file, "not a regular file");
  }
  const auto file_bytes = static_cast<std::size_t>(st.st_size);
  if (file_bytes < kShardHeaderBytes) {
    ::close(fd);
    fail(file, file_bytes == 0 ? "empty file" : fmt::format("{} bytes, shorter than the {}-byte header (truncated?)", file_bytes, kShardHeaderBytes));
  }
  map_ = ::mmap(nullptr, file_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
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
  const std::size_t expected = kShardHeaderBytes + static_cast<std::size_t>(count) * bytes_per_token_;
  if (file_bytes != expected) {
    close_and_fail(fmt::format("{} bytes, but the header's {} tokens need {} ({}); re-run `pax-ocl data prepare`",
                               file_bytes, count, expected, file_bytes < expected ? "truncated" : "trailing bytes"));
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
  std::string out(kShardMagic, sizeof kShardMagic);
  auto put = [&](auto v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(kShardVersion);
  put(width);
  put(static_cast<std::uint64_t>(tokens.size()));
  put(vocab_size);
  put(std::uint32_t{0});
  for (std::uint32_t t : tokens) {
    if (width == 2) {
      put(static_cast<std::uint16_t>(t));
    } else {
      put(t);
    }
  }
  const auto tmp = std::filesystem::path(file.string() + fmt::format(".tmp.{}", ::getpid()));
  {
    std::ofstream o(tmp, std::ios::binary | std::ios::trunc);
    o.write(out.data(), static_cast<std::streamsize>(out.size()));
    if (!o.flush()) throw DataError(fmt::format("cannot write token shard {}", tmp.string()));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) throw DataError(fmt::format("cannot move token shard into place at {}: {}", file.string(), ec.message()));
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
