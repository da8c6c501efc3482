// Enumeration across every platform, checked against a direct count through the raw OpenCL API.
// ctest runs this with POCL_DEVICES="pthread pthread", so PoCL exposes two CPU devices.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "device/device_info.h"
#include "device/device_selection.h"

namespace paxocl::device {
namespace {

// Independent reference: the number of devices of every platform, counted directly.
std::size_t raw_device_count() {
  cl_uint num_platforms = 0;
  if (clGetPlatformIDs(0, nullptr, &num_platforms) != CL_SUCCESS) return 0;
  std::vector<cl_platform_id> platforms(num_platforms);
  clGetPlatformIDs(num_platforms, platforms.data(), nullptr);
  std::size_t total = 0;
  for (cl_platform_id p : platforms) {
    cl_uint n = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &n) == CL_SUCCESS) total += n;
  }
  return total;
}

TEST(Enumeration, ListsEveryDeviceOfEveryPlatform) {
  const std::vector<DeviceInfo> all = enumerate_devices();
  EXPECT_EQ(all.size(), raw_device_count());
  for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].index, static_cast<int>(i));
}

TEST(Enumeration, PoclExposesTwoCpuDevicesWithFullInfo) {
  const char* pocl = std::getenv("POCL_DEVICES");
  if (pocl == nullptr || std::string(pocl) != "pthread pthread") GTEST_SKIP() << "needs POCL_DEVICES='pthread pthread'";
  const std::vector<DeviceInfo> all = enumerate_devices();
  std::vector<DeviceInfo> pocl_devices;
  for (const DeviceInfo& d : all) {
    if (d.platform_name == "Portable Computing Language") pocl_devices.push_back(d);
  }
  ASSERT_EQ(pocl_devices.size(), 2u);
  for (const DeviceInfo& d : pocl_devices) {
    EXPECT_EQ(d.kind, DeviceKind::kCpu);
    EXPECT_FALSE(d.name.empty());
    EXPECT_FALSE(d.vendor.empty());
    EXPECT_FALSE(d.driver_version.empty());
    EXPECT_EQ(d.opencl_version.rfind("OpenCL ", 0), 0u) << d.opencl_version;
    EXPECT_EQ(d.opencl_c_version.rfind("OpenCL C ", 0), 0u) << d.opencl_c_version;
    EXPECT_GE(d.compute_units, 1u);
    EXPECT_GT(d.global_mem_bytes, 0u);
    EXPECT_GT(d.local_mem_bytes, 0u);
    EXPECT_GT(d.max_alloc_bytes, 0u);
    EXPECT_LE(d.max_alloc_bytes, d.global_mem_bytes);
    EXPECT_GE(d.max_work_group_size, 1u);
    EXPECT_TRUE(d.fp64) << "PoCL CPU devices support doubles";
  }
  // Both come from the same platform, in order, and are distinct devices.
  EXPECT_EQ(pocl_devices[0].platform_index, pocl_devices[1].platform_index);
  EXPECT_EQ(pocl_devices[1].index, pocl_devices[0].index + 1);
  EXPECT_NE(pocl_devices[0].id, pocl_devices[1].id);
}

TEST(Enumeration, AutoFallsBackToTheCpuDevicesWhenThereIsNoGpu) {
  const std::vector<DeviceInfo> all = enumerate_devices();
  bool has_gpu = false;
  for (const DeviceInfo& d : all) has_gpu = has_gpu || d.kind == DeviceKind::kGpu || d.kind == DeviceKind::kAccelerator;
  if (has_gpu) GTEST_SKIP() << "this host has a GPU; the fallback is covered by the selection tests";
  const std::vector<DeviceInfo> chosen = select_devices(all, parse_device_selection("auto"));
  EXPECT_EQ(chosen.size(), all.size());
}

}  // namespace
}  // namespace paxocl::device
