// Program-cache benchmark: builds the `elementwise` program (4 kernels, no build-time parameters) on
// the first selected device and reports how long the build took and where it came from (compiled
// or cache), as one JSON line. The whole set a training step builds, with its parameters, is
// timed by `pax-ocl train`'s "first step done" line.
// Run it through bench/program_cache.sh, which times a cold process (empty caches) against warm
// ones; one process alone cannot show the cross-process effect.
#include <chrono>
#include <iostream>

#include <nlohmann/json.hpp>

#include "device/device.h"
#include "device/device_selection.h"
#include "device/program_cache.h"
#include "kernels_cl/embedded_sources.h"
#include "kernels_cl/program_loader.h"

int main() {
  using namespace paxocl;
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto selected = device::select_devices(device::enumerate_devices(),
                                               device::parse_device_selection(device::device_spec_from(std::nullopt)));
  device::Device dev(selected.front());
  const double init_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();

  device::ProgramCache cache;
  nlohmann::json programs = nlohmann::json::array();
  for (const kernels::EmbeddedSource& src : kernels::embedded_sources()) {
    if (src.name != "elementwise") continue;
    const auto before = cache.stats();
    const auto t0 = Clock::now();
    const device::Program program = kernels::load_program(cache, dev, src.name);
    // Creating every kernel forces drivers that compile lazily to finish the work now.
    cl_uint num_kernels = 0;
    clCreateKernelsInProgram(program.get(), 0, nullptr, &num_kernels);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    programs.push_back({{"program", src.name},
                        {"source_bytes", src.source.size()},
                        {"kernels", num_kernels},
                        // "binary": pax-ocl's cache file; "driver": built from source through the driver's
                        // own kernel cache (PoCL), warm or not; "compiled": from source, binary stored.
                        {"built_from", cache.stats().hits > before.hits                   ? "binary"
                                       : cache.stats().driver_cached > before.driver_cached ? "driver"
                                                                                            : "compiled"},
                        {"ms", ms}});
  }
  const double total_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  std::cout << nlohmann::json{{"device", dev.info().name},
                              {"driver", dev.info().driver_version},
                              {"opencl_init_ms", init_ms},
                              {"programs", programs},
                              {"total_ms", total_ms}}
                   .dump()
            << "\n";
}
