#include "common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "common/crc32c.h"
#include "common/errors.h"

namespace paxocl {

namespace {
[[noreturn]] void fail(const std::filesystem::path& file, std::string_view what) {
  throw DataError(fmt::format("{}: {}", file.string(), what));
}

std::filesystem::path temporary_name(const std::filesystem::path& file) {
  static std::atomic<unsigned> count{0};
  return std::filesystem::path(file).concat(fmt::format(".tmp.{}.{}", ::getpid(), count.fetch_add(1)));
}
}  // namespace

AtomicFile::AtomicFile(const std::filesystem::path& file)
    : file_(file), tmp_(temporary_name(file)), fd_(::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) {
  if (!fd_.valid()) fail(file_, fmt::format("cannot create {}: {}", tmp_.string(), std::strerror(errno)));
}

AtomicFile::~AtomicFile() {
  fd_.close();
  if (!committed_) ::unlink(tmp_.c_str());
}

void AtomicFile::write(const void* src, std::size_t bytes) {
  const auto* p = static_cast<const char*>(src);
  crc_ = paxocl::crc32c(std::string_view(p, bytes), crc_);
  size_ += bytes;
  while (bytes > 0) {
    const ssize_t n = ::write(fd_.get(), p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(file_, fmt::format("writing {}: {}", tmp_.string(), std::strerror(errno)));
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_.get()) != 0) fail(file_, fmt::format("fsync of {}: {}", tmp_.string(), std::strerror(errno)));
  if (fd_.close() != 0) fail(file_, fmt::format("closing {}: {}", tmp_.string(), std::strerror(errno)));
  if (::rename(tmp_.c_str(), file_.c_str()) != 0) {
    fail(file_, fmt::format("renaming {} onto it: {}", tmp_.string(), std::strerror(errno)));
  }
  committed_ = true;
  sync_directory(file_.has_parent_path() ? file_.parent_path() : std::filesystem::path("."));
}

void write_file_atomically(const std::filesystem::path& file, std::string_view text) {
  AtomicFile out(file);
  out.write(text);
  out.commit();
}

std::string why_cannot_write(const std::filesystem::path& file) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) return "is a directory";
  // The temporary file is created beside `file`, so its directory must exist and take new entries.
  const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
  if (!std::filesystem::is_directory(dir, ec)) return fmt::format("its directory {} does not exist", dir.string());
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return fmt::format("its directory {} is not writable: {}", dir.string(), std::strerror(errno));
  }
  return "";
}

void sync_directory(const std::filesystem::path& dir) {
  if (const UniqueFd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); dfd.valid()) ::fsync(dfd.get());
}

}  // namespace paxocl
