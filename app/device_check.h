// `pax-ocl devices --check`: proves each selected device can run pax-ocl's kernels. Builds the
// embedded programs through the program cache and runs an axpy and an add over 1M floats,
// compared with a double-precision host reference.
#pragma once

#include <nlohmann/json.hpp>

#include "device/device.h"
#include "device/program_cache.h"

namespace paxocl::app {

// {"passed", "max_abs_error", "programs_from_cache", "programs_compiled", "build_ms", "kernel_ms"}
nlohmann::json check_device(device::ProgramCache& cache, device::Device& device);

}  // namespace paxocl::app
