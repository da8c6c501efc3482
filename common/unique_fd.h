// UniqueFd: sole owner of a POSIX file descriptor, closed when the owner dies (RAII, as every
// OpenCL object here). Move-only. close() reports the close(2) result for writers that must know
// their data reached the file system; the destructor ignores it (nothing to report to).
#pragma once

#include <unistd.h>

#include <utility>

namespace paxocl {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      UniqueFd gone(std::exchange(fd_, std::exchange(other.fd_, -1)));
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Closes now; 0, or -1 with errno set as close(2) left it.
  int close() { return fd_ >= 0 ? ::close(std::exchange(fd_, -1)) : 0; }

 private:
  int fd_ = -1;
};

}  // namespace paxocl
