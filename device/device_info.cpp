#include "device/device_info.h"

#include <spdlog/spdlog.h>

#include "common/host_isa.h"
#include "device/cl_error.h"
#include "device/known_peaks.h"

namespace paxocl::device {

const char* to_string(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kGpu: return "gpu";
    case DeviceKind::kAccelerator: return "accelerator";
    case DeviceKind::kCpu: return "cpu";
    case DeviceKind::kOther: return "other";
  }
  return "other";
}

namespace {

constexpr cl_int kPlatformNotFoundKhr = -1001;

// A string property through a clGet*Info function (size query, then the value).
template <typename Handle, typename Info>
std::string info_string(cl_int (*get)(Handle, Info, std::size_t, void*, std::size_t*), Handle handle, Info what,
                        const char* call) {
  std::size_t size = 0;
  check_cl(get(handle, what, 0, nullptr, &size), call, "reading OpenCL info");
  std::string s(size, '\0');
  check_cl(get(handle, what, size, s.data(), nullptr), call, "reading OpenCL info");
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string platform_string(cl_platform_id platform, cl_platform_info what) {
  return info_string(clGetPlatformInfo, platform, what, "clGetPlatformInfo");
}

std::string device_string(cl_device_id device, cl_device_info what) {
  return info_string(clGetDeviceInfo, device, what, "clGetDeviceInfo");
}

template <typename T>
T device_value(cl_device_id device, cl_device_info what) {
  T value{};
  check_cl(clGetDeviceInfo(device, what, sizeof value, &value, nullptr), "clGetDeviceInfo", "reading device info");
  return value;
}

DeviceKind kind_of(cl_device_type type) {
  if (type & CL_DEVICE_TYPE_GPU) return DeviceKind::kGpu;
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return DeviceKind::kAccelerator;
  if (type & CL_DEVICE_TYPE_CPU) return DeviceKind::kCpu;
  return DeviceKind::kOther;
}

bool has_extension(const std::string& extensions, const std::string& name) {
  std::size_t pos = 0;
  while ((pos = extensions.find(name, pos)) != std::string::npos) {
    const std::size_t end = pos + name.size();
    const bool starts = pos == 0 || extensions[pos - 1] == ' ';
    const bool ends = end == extensions.size() || extensions[end] == ' ';
    if (starts && ends) return true;
    pos = end;
  }
  return false;
}

DeviceInfo describe(cl_platform_id platform, int platform_index, cl_device_id id) {
  DeviceInfo d;
  d.platform_index = platform_index;
  d.platform = platform;
  d.id = id;
  d.platform_name = platform_string(platform, CL_PLATFORM_NAME);
  d.platform_version = platform_string(platform, CL_PLATFORM_VERSION);
  d.name = device_string(id, CL_DEVICE_NAME);
  d.vendor = device_string(id, CL_DEVICE_VENDOR);
  d.driver_version = device_string(id, CL_DRIVER_VERSION);
  d.opencl_version = device_string(id, CL_DEVICE_VERSION);
  d.opencl_c_version = device_string(id, CL_DEVICE_OPENCL_C_VERSION);
  d.kind = kind_of(device_value<cl_device_type>(id, CL_DEVICE_TYPE));
  d.compute_units = device_value<cl_uint>(id, CL_DEVICE_MAX_COMPUTE_UNITS);
  d.clock_mhz = device_value<cl_uint>(id, CL_DEVICE_MAX_CLOCK_FREQUENCY);
  d.native_float_lanes = device_value<cl_uint>(id, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT);
  if (d.kind == DeviceKind::kCpu) {
    d.bf16_flops_per_cycle = cpu_bf16_flops_per_cycle(host_isa().amx_bf16, host_isa().avx512_bf16, d.native_float_lanes);
  }
  d.global_mem_bytes = device_value<cl_ulong>(id, CL_DEVICE_GLOBAL_MEM_SIZE);
  d.local_mem_bytes = device_value<cl_ulong>(id, CL_DEVICE_LOCAL_MEM_SIZE);
  d.max_alloc_bytes = device_value<cl_ulong>(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  d.max_work_group_size = device_value<std::size_t>(id, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  d.base_address_align_bytes = device_value<cl_uint>(id, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8;
  d.native_kernels = (device_value<cl_device_exec_capabilities>(id, CL_DEVICE_EXECUTION_CAPABILITIES) & CL_EXEC_NATIVE_KERNEL) != 0;
  const std::string extensions = device_string(id, CL_DEVICE_EXTENSIONS);
  d.fp16 = has_extension(extensions, "cl_khr_fp16");
  d.fp64 = has_extension(extensions, "cl_khr_fp64") ||
           device_value<cl_device_fp_config>(id, CL_DEVICE_DOUBLE_FP_CONFIG) != 0;
  return d;
}

}  // namespace

std::vector<DeviceInfo> enumerate_devices() {
  cl_uint num_platforms = 0;
  const cl_int err = clGetPlatformIDs(0, nullptr, &num_platforms);
  if (err == kPlatformNotFoundKhr || (err == CL_SUCCESS && num_platforms == 0)) {
    throw DeviceError(
        "no OpenCL platform found: install an OpenCL driver (for CPUs: apt-get install "
        "pocl-opencl-icd; for GPUs: your vendor's ICD) and check /etc/OpenCL/vendors/*.icd");
  }
  check_cl(err, "clGetPlatformIDs", "counting OpenCL platforms");
  std::vector<cl_platform_id> platforms(num_platforms);
  check_cl(clGetPlatformIDs(num_platforms, platforms.data(), nullptr), "clGetPlatformIDs",
           "listing OpenCL platforms");

  std::vector<DeviceInfo> devices;
  for (cl_uint p = 0; p < num_platforms; ++p) {
    cl_uint count = 0;
    const cl_int derr = clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &count);
    if (derr == CL_DEVICE_NOT_FOUND || count == 0) continue;
    if (derr != CL_SUCCESS) {
      // One broken driver must not hide the devices of the others.
      spdlog::warn("skipping OpenCL platform {}: clGetDeviceIDs failed with {} ({})", p,
                   cl_error_name(derr), derr);
      continue;
    }
    std::vector<cl_device_id> ids(count);
    check_cl(clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, count, ids.data(), nullptr),
             "clGetDeviceIDs", "listing the devices of an OpenCL platform");
    for (cl_device_id id : ids) {
      DeviceInfo d = describe(platforms[p], static_cast<int>(p), id);
      d.index = static_cast<int>(devices.size());
      devices.push_back(std::move(d));
    }
  }
  return devices;
}

}  // namespace paxocl::device
