// CpuFlashAttention: causal attention on CPU devices as one OpenCL native kernel per call, which
// runs host_flash_attention.h's blocked computation on the mapped buffers, in queue order like any
// kernel (as the host GEMMs do, kernels_cl/host_gemm.h). Same arguments and results as
// FlashAttentionKernels (kernels_cl/flash_attention.h), which runs on devices with the GPU set;
// models/layers/causal_attention.cpp uses this one on CPU devices with the CPU set, and its GEMM +
// softmax path where neither runs. Its multiplications are oneDNN's sgemm on every GEMM policy
// (--gemm picks the layers' GEMMs; attention's are part of this kernel, as on GPUs).
#pragma once

#include <cstddef>
#include <string>

#include "kernels_cl/flash_attention.h"

namespace paxocl::kernels {

// Whether `device` runs attention this way: a CPU device that runs native kernels (PoCL's) and the
// CPU kernel set (the portable set keeps the GEMM path, as a reference), unless
// PAX_OCL_CPU_FLASH=0 (a measuring switch: the GEMM + softmax path). ConfigError for a value of
// PAX_OCL_CPU_FLASH other than 0 or 1.
bool uses_cpu_flash_attention(const device::DeviceInfo& device);
// Why not, for the log ("PAX_OCL_CPU_FLASH=0", "the device runs no native kernels", ...); empty
// where uses_cpu_flash_attention.
std::string cpu_flash_refusal(const device::DeviceInfo& device);
// Attention as fused kernels of either kind (uses_flash_attention or uses_cpu_flash_attention):
// no score workspace (the planner's LayoutSpec::flash_attention).
bool fused_attention(const device::DeviceInfo& device, std::size_t head_size);

class CpuFlashAttention {
 public:
  // DeviceError unless uses_cpu_flash_attention(device).
  explicit CpuFlashAttention(device::Device& device);
  // Waits for its queued calls, so that none of its native kernels runs on once it is gone.
  ~CpuFlashAttention();
  CpuFlashAttention(const CpuFlashAttention&) = delete;
  CpuFlashAttention& operator=(const CpuFlashAttention&) = delete;

  // For the log: "flash attention on the host (one native kernel per call: blocks of 64 queries,
  // oneDNN's sgemm, softmax in AVX-512, 2 threads)".
  std::string describe() const;

  // As FlashAttentionKernels::forward and ::backward (backward's delta is not used: each task
  // computes its rows' dO.o itself). A failure inside a call's native kernel is recorded on the
  // queue (device::NativeFailure): the queue's next synchronisation, or the next call here, throws
  // it as a DeviceError, so that its results are not used.
  void forward(const ActBuffer& q, std::size_t q_stride, const KeyValueRows& kv, ActBuffer& out,
               std::size_t out_stride, FloatBuffer& lse, std::size_t stats_stride, const AttentionHeads& heads,
               std::size_t B, std::size_t queries, std::size_t p0);
  void backward(const ActBuffer& qkv, std::size_t width, std::size_t k_col, std::size_t v_col, const ActBuffer& out,
                const ActBuffer& dout, const FloatBuffer& lse, ActBuffer& dqkv, const AttentionHeads& heads,
                std::size_t B, std::size_t T);

 private:
  device::Device& device_;
};

}  // namespace paxocl::kernels
