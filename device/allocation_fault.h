// Fault injection for device allocations, a test hook: with PAX_OCL_FAIL_ALLOCATION=<text> set, every
// device buffer whose name contains <text> fails as if clCreateBuffer had returned
// CL_MEM_OBJECT_ALLOCATION_FAILURE. Real drivers fail that way only on a full device, which no test
// can arrange reliably; the hook lets the CLI tests prove that an allocation failure anywhere (the
// weights, Adam's moments, a KV cache, a pinned staging area) ends in a one-line error and exit
// status 4, never an abort. Unset or empty: no effect.
#pragma once

#include <string_view>

namespace paxocl::device {

inline constexpr const char* kFailAllocationEnvVar = "PAX_OCL_FAIL_ALLOCATION";

// Whether the allocation of `buffer_name` is to fail (PAX_OCL_FAIL_ALLOCATION is a part of it).
bool allocation_fault_injected(std::string_view buffer_name);

}  // namespace paxocl::device
