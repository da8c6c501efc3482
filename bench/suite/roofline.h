// The roofline of a GPT training step (`pax-ocl bench kernels --roofline`): for every kernel the
// GPU set runs in one step (forward, backward, Adam; the GEMMs as Linear and the LM head run them,
// attention as flash attention), the bytes it must move and the FLOPs it does per call, counted
// from the shapes, and the time an H100 needs at least for them: max(bytes / bandwidth, FLOPs /
// peak). Bytes are the minimum: each input read once, each output written once (an accumulated
// gradient read and written), at the activation dtype's size; FLOPs are the arithmetic per element
// as the kernels do it (approximate for GELU's tanh and exp, which do not decide any bound here).
// No device is used: the table says what the kernels could reach, not what they reach.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "models/gpt_config.h"

namespace paxocl::bench {

// One kernel (or GEMM) of the step: per call, at `calls` calls per step.
struct KernelTraffic {
  std::string kernel;  // the kernel's name (its shape variant in parentheses)
  std::string group;   // what PyTorch's figures are reported against: "layernorm", "attention", ...
  std::size_t calls = 0;
  double bytes = 0;  // per call
  double flops = 0;  // per call
  bool gemm = false;
};

// The step of a GPT (every block attention) of `batch` sequences of `seq_len` tokens, activations
// of `act_bytes` bytes (4: float32; 2: a 16-bit FPROP_DTYPE, which adds the per-step cast of the
// parameters), in the order the step runs them (each kind once, at its first call).
std::vector<KernelTraffic> step_kernel_traffic(const models::GptConfig& model, std::size_t batch, std::size_t seq_len,
                                               std::size_t act_bytes = 4);

// The device the bound is computed for.
struct RooflinePeak {
  std::string name;
  double bytes_per_second = 0;
  double flops_per_second = 0;
};
// NVIDIA H100 SXM as measured (../shared/gpu/H100.md): 2.6 TB/s (triad at 256 MB), 67 TFLOP/s fp32.
RooflinePeak h100_fp32();

// Seconds one call needs at least on `peak`.
double lower_bound_seconds(const KernelTraffic& k, const RooflinePeak& peak);

// A step to tabulate, with what PyTorch measured for it (empty where nothing was measured).
struct RooflineCase {
  std::string title;  // e.g. "GPT-2 124M, T1024 B8"
  models::GptConfig model;
  std::size_t batch = 0, seq_len = 0;
  double pytorch_step_ms = 0;  // PyTorch fp32's whole step on the device (0: not measured)
  // Per group (KernelTraffic::group): PyTorch's time per step as measured, as text ("< 0.5", "1.5").
  std::vector<std::pair<std::string, std::string>> pytorch_group_ms;
};
// GPT-2 124M at T1024 B8 and bench_train_step's config D (L12 D768 H12 V50304, T256 B4), with
// PyTorch's H100 figures from ../shared/gpu/H100.md.
std::vector<RooflineCase> h100_roofline_cases();

// The Markdown table of one case: per kernel its calls, bytes and FLOPs per call, the bound per
// call and per step and what limits it; then the non-GEMM and GEMM sums, the groups beside
// PyTorch's measured times, and the non-GEMM sum as a share of PyTorch's step. Deterministic.
std::string roofline_markdown(const RooflineCase& c, const RooflinePeak& peak);

}  // namespace paxocl::bench
