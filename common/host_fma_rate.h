// The float32 FMA rate this host's cores reach, measured rather than computed from a clock: a
// virtual machine reports its CPU's base clock (a 2-core Xeon with AMX: "2100 MHz", 269 GFLOP/s by
// that clock) while its cores run at a turbo clock (330 GFLOP/s measured; PyTorch's float32 matmul
// reached 330 there too). What no float32 FMA code can beat, up to the measurement's noise:
// auto_gemm.h bounds the OpenCL GEMM tiles on CPU devices by it.
#pragma once

namespace paxocl {

// `threads` threads started together, each running independent FMA chains on the widest vectors
// host_isa() reports (AVX-512 or AVX2 + FMA; each chain's result kept, so no compiler drops one):
// the best of 5 runs of about half a millisecond, 2 ms apart, in GFLOP/s (2 per FMA lane); about
// 15 ms in all. 0 on a host with neither set (no measurement: callers fall back on a clock).
double measure_host_fma_gflops(unsigned threads);

}  // namespace paxocl
