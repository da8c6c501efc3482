// DeviceRuntime: what computes on one device: the device (its context and in-order queue), the
// kernel library built for the activation dtype, and the GEMM the policy chose. The step programs
// build one per local device; models, layers and optimizers receive it and own none of it, so
// kernels, GEMM choice and queue are shared by everything on that device.
#pragma once

#include <memory>
#include <string>

#include "device/device.h"
#include "device/dtype.h"
#include "device/program_cache.h"
#include "kernels_cl/gemm.h"
#include "kernels_cl/kernel_library.h"

namespace paxocl::kernels {

class DeviceRuntime {
 public:
  // `act`: the dtype of activations and of weights as read (FPROP_DTYPE). `gemm_policy` and
  // `precision` (MATMUL_PRECISION): see auto_gemm.h. ConfigError when the GEMM cannot take `act` operands (CLBlast with 16 bits).
  DeviceRuntime(device::Device& device, device::ProgramCache& cache, device::DType act, const std::string& gemm_policy,
                MatmulPrecision precision = MatmulPrecision::kFloat32);
  DeviceRuntime(const DeviceRuntime&) = delete;
  DeviceRuntime& operator=(const DeviceRuntime&) = delete;

  device::Device& device() const { return device_; }
  device::Queue& queue() const { return device_.queue(); }
  KernelLibrary& kernels() { return kernels_; }
  Gemm& gemm() { return *gemm_; }
  // Whether GEMMs with float32 operands run on tensor cores (as TF32: MATMUL_PRECISION=tf32 where the
  // probe passed), for the MFU's theoretical peak.
  bool float32_on_tensor_cores() const;
  device::DType act_dtype() const { return kernels_.act_dtype(); }

 private:
  device::Device& device_;
  KernelLibrary kernels_;
  std::unique_ptr<Gemm> gemm_;
};

}  // namespace paxocl::kernels
