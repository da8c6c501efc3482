// FileLock: an exclusive flock(2) on a lock file, for work that one process at a time may do
// (e.g. preparing a dataset that several ranks or independent jobs want at once). The lock is
// released when the object dies, or by the kernel when the process does, so a killed holder never
// leaves it stuck. The file is created if missing and never removed: removing it would let a
// waiter and a newcomer lock two different files.
#pragma once

#include <filesystem>

#include "common/unique_fd.h"

namespace paxocl {

class FileLock {
 public:
  // Opens (creating) `file`; DataError naming it when that fails. Does not lock yet.
  explicit FileLock(const std::filesystem::path& file);  // closing the file (its end) releases the lock

  bool try_lock();  // true when now held
  void lock();      // waits until held; DataError when the file system refuses locks
  const std::filesystem::path& path() const { return file_; }

 private:
  std::filesystem::path file_;
  UniqueFd fd_;
};

}  // namespace paxocl
