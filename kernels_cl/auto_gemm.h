// make_gemm: the GEMM a device runs, chosen by policy (PAX_OCL_GEMM or the caller):
//   auto      pax-ocl picks per shape class among the variants for the device class — CPU
//             devices: oneDNN and BLIS as native kernels where the device runs them
//             (onednn_gemm.h, blis_gemm.h) and the register-tile OpenCL variants (cpu-8x48,
//             cpu-12x32); GPUs and others: the packed
//             work-group variant (gpu-64x64), the unpacked one (gpu-direct-<tile>, direct_gemm.h:
//             the tile `pax-ocl tune` stored for the device, else three tiles of different sizes,
//             direct_auto_tiles), CLBlast and, on Intel GPUs whose probe passed, oneDNN
//             (onednn_gemm.h). At the first GEMM of a class it times each candidate on that
//             shape (dimensions capped at 2048 on CPU devices, 4096 on others; each timed run
//             right after an untimed one; best of 5 rounds, up to 40 while under 50 ms were
//             timed) and keeps the fastest (on CPU devices the OpenCL tiles are built and timed
//             only where the host's measured float32 FMA rate, which bounds theirs, reaches the
//             rate oneDNN or BLIS ran the class at: not for bfloat16 on AMX, nor on AVX-512
//             BF16 where a core has one 512-bit FMA port's worth); the choices are
//             stored next to the program cache, so later processes skip the timing (a change of
//             the candidate list, such as a newly tuned direct tile, times them again).
//             On a device whose tensor-core probe passed (NVIDIA, tensor_core_probe.h), GEMMs with
//             A and B both bfloat16 or both float16 run on tensor cores (tensor-core, below: its
//             tile timed per shape class the same way, make_timed_gemm) and the rest as above.
//   blis | onednn | clblast | cpu-8x48 | cpu-12x32 | gpu-64x64   that implementation for every shape.
//   gpu-direct   DirectGemm with the device's tuned (or default) tile for every shape.
//   tensor-core   16-bit A and B on tensor cores where the probe passed, everything else on auto's
//             float32-accumulating choice (tensor_core_gemm.h).
// `precision` kTf32 (MATMUL_PRECISION=tf32): with auto or tensor-core, float32 A and B also run on
// tensor cores (as TF32) where the probe's tf32 path passed; anywhere else GEMMs stay float32, and
// make_gemm says so in one log line.
// Shape class: each of m, n, k bucketed as <= 64, <= 512 or larger, and batched or not
// (transposes are left out: packing absorbs them, and the direct GEMM loads every operand along
// its contiguous dimension whatever the transpose); with 16-bit operands also their dtypes
// (".bbf": A and B bfloat16, C float32), among the candidates that take them (not CLBlast).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "device/program_cache.h"
#include "kernels_cl/gemm.h"

namespace paxocl::kernels {

inline constexpr const char* kGemmEnvVar = "PAX_OCL_GEMM";

// The policy named by `flag` if given, else $PAX_OCL_GEMM, else "auto". Throws ConfigError for
// an unknown name, listing the valid ones.
std::string gemm_policy_from(const std::optional<std::string>& flag);

std::unique_ptr<Gemm> make_gemm(device::Device& device, device::ProgramCache& cache, const std::string& policy,
                                MatmulPrecision precision = MatmulPrecision::kFloat32);
// `auto` without tensor cores on any device: the timed choice among the float32-accumulating
// variants (the tensor-core GEMM's fallback).
std::unique_ptr<Gemm> make_float32_accumulating_gemm(device::Device& device, device::ProgramCache& cache);

// Builds a candidate GEMM from its name.
using GemmFactory = std::function<std::unique_ptr<Gemm>(const std::string& name)>;
// An upper bound on a candidate's rate in GFLOP/s on the device, or 0 where none is known.
using GemmRateBound = std::function<double(const std::string& name)>;
// A GEMM that runs each shape class (below) on the fastest of `candidates`, timed as `auto` times
// its variants at the class's first GEMM and remembered in <cache dir>/<file_stem>-<device
// fingerprint>.txt; `make` builds a candidate from its name. A GEMM whose dtypes no candidate
// takes is a logic error: callers route only what their candidates take (the tensor-core GEMM's
// per-class tile, tensor_core_gemm.h). Candidates with a `bound` are built and timed only where
// it is at least the rate the others (timed first, for 400 ms at least unless they beat every
// bound sooner) reached on the class: one that cannot win is never built (its build can take
// longer than the timing). Without others, they are timed.
std::unique_ptr<Gemm> make_timed_gemm(device::Device& device, device::ProgramCache& cache,
                                      std::vector<std::string> candidates, GemmFactory make,
                                      const std::string& file_stem, GemmRateBound bound = {});

// "m512.n64.kbig.single" style: each dimension's bucket (64, 512, big up to 4096, huge beyond).
std::string gemm_shape_class(const GemmShape& shape);
// The shape `auto` times a class at, from its first GEMM: m and n at most `cap` (2048 on CPU
// devices, 4096 elsewhere), k at most 4 x cap, and at most cap^3 multiply-adds, reached by halving
// the larger of m and n. k is kept longest because its length changes
// which GEMM wins: on a 2-core Xeon the OpenCL tiles run k = 2048 at 0.8x oneDNN's rate and
// k = 16384 at 0.55x.
GemmShape gemm_timing_shape(GemmShape shape, std::size_t cap);

}  // namespace paxocl::kernels
