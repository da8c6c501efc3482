// FPROP_DTYPE=auto, the Default experiment's setting: the activation dtype a job's devices run
// fastest, chosen from their instruction sets (never their names) and stated at start-up.
//   bfloat16  every device is a CPU with bfloat16 matrix instructions (CPUID's AMX-BF16 or
//             AVX512_BF16: DeviceInfo::bf16_flops_per_cycle > 0), where oneDNN multiplies 16-bit
//             operands without widening them (issue 38: config C ran 1800 tok/s in bfloat16
//             against 1667 in float32 on a Sapphire Rapids-class Xeon);
//   float32   every other device: a CPU without them widens 16-bit operands first (an AVX2 EPYC
//             ran C in bfloat16 at half its float32 rate, 477 against 965 tok/s), and GPUs keep
//             float32 unless the experiment names a 16-bit dtype, as Pax's GPU experiments do.
// A GEMM policy that multiplies float32 only (blis, clblast) keeps float32 too. float16 is never
// chosen: oneDNN 2.6 has no float16 CPU matmul.
#pragma once

#include <string>
#include <vector>

#include "device/device_info.h"
#include "device/dtype.h"

namespace paxocl::device {

struct AutoFpropDtype {
  DType dtype = DType::kF32;
  std::string reason;  // "CPU devices with AMX-BF16 / AVX512_BF16 ...", for the start-up line
};

// `gemm_policy`: the job's --gemm (kernels_cl/auto_gemm.h's names).
AutoFpropDtype auto_fprop_dtype(const std::vector<DeviceInfo>& devices, const std::string& gemm_policy = "auto");

}  // namespace paxocl::device
