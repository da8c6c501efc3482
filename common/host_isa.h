// The host CPU's instruction sets that pax-ocl's host code chooses by, read from CPUID once per
// process (AVX and AVX-512 only where the OS saves their registers: __builtin_cpu_supports checks XGETBV).
// One definition of each, so that the code that runs on a set and the cache keys that tell hosts
// apart agree on what a CPU "has":
//   avx2_fma     AVX2 and FMA: host flash attention's AVX2 unit.
//   avx512       AVX-512 F, DQ, BW and VL (every AVX-512 server CPU since Skylake-SP): BLIS's skx
//                kernels need all four; host flash attention's AVX-512 unit (F + FMA) runs on it.
//   avx512_bf16  AVX512_BF16 (Cooper Lake, Sapphire Rapids, Zen 4): bfloat16 dot products.
//   amx_bf16     AMX-BF16 (Sapphire Rapids and later): bfloat16 tile products.
//   f16c         F16C with AVX: float16 <-> float32 conversions in 8 lanes.
// On a non-x86 host every flag is false.
#pragma once

#include <string>

namespace paxocl {

struct HostIsa {
  bool avx2_fma = false;
  bool avx512 = false;
  bool avx512_bf16 = false;
  bool amx_bf16 = false;
  bool f16c = false;
};

// This host's sets (computed at the first call).
const HostIsa& host_isa();

// The sets a host has, comma-separated, widest last: "avx2,avx512,avx512bf16,amx-bf16" (F16C left
// out: every CPU with AVX2 has it). Empty for a host with none of them. Stable: cache keys hold it.
std::string host_isa_list(const HostIsa& isa);

}  // namespace paxocl
