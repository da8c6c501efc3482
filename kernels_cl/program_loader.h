// Builds the project's OpenCL programs (the embedded sources, or PAX_OCL_KERNEL_SOURCE_DIR's copies:
// embedded_sources.h) for a device, through the program cache, with the build options every
// pax-ocl kernel is written for. A program of the kernel library (kernel_library.h) comes back as
// its group's one OpenCL program (program_loader.cpp), built once per device and options and shared
// by every caller; the others, and copies from PAX_OCL_KERNEL_SOURCE_DIR, build alone.
#pragma once

#include <string_view>

#include "device/device.h"
#include "device/program_cache.h"

namespace paxocl::kernels {

// OpenCL C 1.2 runs everywhere; -cl-mad-enable lets a*b+c fuse (as XLA does on GPUs).
inline constexpr std::string_view kBuildOptions = "-cl-std=CL1.2 -cl-mad-enable";

// `extra_options` (e.g. "-DMR=8 -DNR=48") are appended for kernels built in several variants.
device::Program load_program(device::ProgramCache& cache, const device::Device& device, std::string_view name,
                             std::string_view extra_options = "");

}  // namespace paxocl::kernels
