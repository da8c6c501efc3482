// announce_once: whether a log line is new to this process. Lines that name a choice (the kernel
// set, a GEMM, the SSM convolution, attention, a slow set-up step) are said the first time the
// choice is made for a device, not at every step; callers key them by what they name and the
// device's id (device names repeat: two PoCL devices share one). Thread-safe, process-wide.
#pragma once

#include <string_view>

namespace paxocl {

// True exactly once per distinct `key` in the process (the first call), false after.
bool announce_once(std::string_view key);

}  // namespace paxocl
