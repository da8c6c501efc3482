// Enumeration of every OpenCL platform and device on this host, and what pax-ocl needs to know
// about each. Devices are numbered in enumeration order (platform by platform); that index is
// what `--devices=0,2` refers to.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "device/cl_api.h"

namespace paxocl::device {

enum class DeviceKind { kGpu, kAccelerator, kCpu, kOther };
const char* to_string(DeviceKind kind);  // "gpu", "accelerator", "cpu", "other"

struct DeviceInfo {
  int index = 0;            // position in the host-wide enumeration
  int platform_index = 0;   // which platform it belongs to
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;

  std::string platform_name;
  std::string platform_version;   // "OpenCL 3.0 PoCL 3.1 ..."
  std::string name;
  std::string vendor;
  std::string driver_version;     // CL_DRIVER_VERSION
  std::string opencl_version;     // CL_DEVICE_VERSION, "OpenCL 3.0 PoCL ..."
  std::string opencl_c_version;   // CL_DEVICE_OPENCL_C_VERSION
  DeviceKind kind = DeviceKind::kOther;
  std::uint32_t compute_units = 0;
  std::uint32_t clock_mhz = 0;
  std::uint32_t native_float_lanes = 0;  // CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT: 8 on AVX2, 16 on AVX-512
  // CPU devices (the host's CPU): bfloat16 FLOPs per core per cycle from CPUID's AMX-BF16 and
  // AVX512_BF16 flags (device::cpu_bf16_flops_per_cycle); 0 elsewhere.
  std::uint32_t bf16_flops_per_cycle = 0;
  std::uint64_t global_mem_bytes = 0;
  std::uint64_t local_mem_bytes = 0;
  std::uint64_t max_alloc_bytes = 0;
  std::uint64_t max_work_group_size = 0;
  std::uint32_t base_address_align_bytes = 0;  // CL_DEVICE_MEM_BASE_ADDR_ALIGN / 8: sub-buffer alignment
  bool native_kernels = false;  // CL_EXEC_NATIVE_KERNEL: host functions run in queue order (CPU devices)
  bool fp16 = false;  // cl_khr_fp16
  bool fp64 = false;  // cl_khr_fp64 or a non-empty CL_DEVICE_DOUBLE_FP_CONFIG
};

// Every device of every platform. Throws DeviceError with install advice when the ICD loader
// finds no platform at all; a platform that fails to list its devices is skipped with a warning.
std::vector<DeviceInfo> enumerate_devices();

}  // namespace paxocl::device
