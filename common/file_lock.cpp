#include "common/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl {

FileLock::FileLock(const std::filesystem::path& file)
    : file_(file), fd_(::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
  if (!fd_.valid()) throw DataError(fmt::format("cannot open the lock file {}: {}", file.string(), std::strerror(errno)));
}

bool FileLock::try_lock() {
  int rc = 0;
  while ((rc = ::flock(fd_.get(), LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {
  }
  if (rc == 0) return true;
  if (errno == EWOULDBLOCK) return false;
  throw DataError(fmt::format("cannot lock {}: {}", file_.string(), std::strerror(errno)));
}

void FileLock::lock() {
  int rc = 0;
  while ((rc = ::flock(fd_.get(), LOCK_EX)) != 0 && errno == EINTR) {
  }
  if (rc != 0) throw DataError(fmt::format("cannot lock {}: {}", file_.string(), std::strerror(errno)));
}

}  // namespace paxocl
