// Program-cache benchmark: builds every embedded kernel program (but the NVIDIA-only PTX ones) on
// the first selected device and reports how long each build took and where it came from (compiled
// or cache), as one JSON line.
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
#include "kernels_cl/tensor_core_probe.h"

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
    if (kernels::is_ptx_program(src.name)) continue;  // NVIDIA-only, built behind the tensor-core probe
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
                        {"from_cache", cache.stats().hits > before.hits},
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
