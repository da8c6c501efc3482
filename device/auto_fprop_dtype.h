// FPROP_DTYPE=auto, the Default experiment's setting: the activation dtype a job's devices run
// fastest, chosen from their instruction sets and a measurement (never their names) and stated
// at start-up.
//   bfloat16  every device is a CPU with bfloat16 matrix instructions (CPUID's AMX-BF16 or
//             AVX512_BF16: DeviceInfo::bf16_flops_per_cycle > 0) that runs host GEMMs, and on
//             this host oneDNN's bfloat16 matmul (16-bit operands, not widened) measured at least
//             kBf16MinGemmSpeedup times its float32 one. An AMD EPYC with AVX512_BF16 ran config C
//             in bfloat16 at 1.6x its float32 rate; an Intel Xeon with AVX512_BF16 but no AMX ran
//             oneDNN's bfloat16 matmul at 0.55x its float32 one (170 against 300 GFLOP/s), so
//             the instructions alone do not decide;
//   float32   every other device: a CPU without them widens 16-bit operands first (an AVX2 EPYC
//             ran C in bfloat16 at half its float32 rate, 477 against 965 tok/s), and GPUs keep
//             float32 unless the experiment names a 16-bit dtype, as Pax's GPU experiments do.
// A GEMM policy other than auto and onednn keeps float32 too: blis and clblast multiply float32
// only, and pax-ocl's OpenCL GEMMs widen 16-bit operands. float16 is never chosen: oneDNN 2.6 has
// no float16 CPU matmul.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "device/device_info.h"
#include "device/dtype.h"

namespace paxocl::device {

struct AutoFpropDtype {
  DType dtype = DType::kF32;
  std::string reason;  // "CPU devices with AMX-BF16 / AVX512_BF16 ...", for the start-up line
};

// A bfloat16 GEMM against a float32 one of the same shape on this host, each its best of a few runs.
struct Bf16GemmRates {
  double bf16_gflops = 0;  // 0: no bfloat16 GEMM that multiplies 16-bit operands here (see `what`)
  double f32_gflops = 0;
  std::string what;  // "oneDNN avx512_core_bf16 kernels, 1024^3, 2 threads", or why there is none
};
// Measures Bf16GemmRates with `threads` host threads (kernels::measure_onednn_bf16_gemm).
using Bf16GemmProbe = std::function<Bf16GemmRates(unsigned threads)>;

// The least bfloat16 / float32 GEMM rate for which auto trains in bfloat16: bfloat16 also rounds
// activations, so it must pay clearly (measured ratios: 0.55 on an Intel Xeon without AMX, 1.6
// and more with AVX512_BF16 on an AMD EPYC, several times with AMX).
inline constexpr double kBf16MinGemmSpeedup = 1.1;

// `gemm_policy`: the job's --gemm (kernels_cl/auto_gemm.h's names). `measure` runs only where the
// instruction sets leave bfloat16 possible (once, on this host's threads for one device).
AutoFpropDtype auto_fprop_dtype(const std::vector<DeviceInfo>& devices, const std::string& gemm_policy,
                                const Bf16GemmProbe& measure);

}  // namespace paxocl::device
