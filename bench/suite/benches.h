// The benchmarks of `pax-ocl bench`. Each measures one thing and returns a Table (report.h);
// times are the best of several repetitions after a warm-up, with the device queue drained.
// `quick` takes fewer and smaller sizes (for tests and a first look).
#pragma once

#include <string>
#include <vector>

#include "bench/suite/report.h"
#include "device/device.h"
#include "device/program_cache.h"
#include "kernels_cl/gemm.h"
#include "models/gpt_config.h"
#include "models/model_config.h"

namespace paxocl::bench {

// Every GEMM of one training step on one device (forward and backward, as models/layers/ runs
// them) for `batch` sequences of MAX_SEQ_LEN tokens: each distinct shape once, with how many times
// a step runs it. Attention's GEMMs appear per query block as one batch of NUM_HEADS matrices (the
// same FLOPs as the layer's head groups) run batch x NUM_LAYERS times (float32 activations' blocks).
struct GemmCase {
  std::string name;
  kernels::GemmShape shape;
  std::size_t count = 1;
};
std::vector<GemmCase> model_gemm_cases(const models::GptConfig& model, std::size_t batch);
double gemm_flops(const GemmCase& c);  // count x 2 m n k x batch

// Times GEMMs on scratch operands sized for the largest of `cases` (row-major, dense batches).
class GemmTimer {
 public:
  GemmTimer(device::Device& device, const std::vector<GemmCase>& cases);
  double seconds(kernels::Gemm& gemm, const kernels::GemmShape& shape, int reps);  // best of reps
  static double gflops(const kernels::GemmShape& shape, double seconds);  // all `batch` matrices

 private:
  device::Device& device_;
  device::Buffer<float> a_, b_, c_;
};

// GFLOP/s of every GEMM implementation the device has: pax-ocl's auto choice, each variant it
// chooses among (BLIS as a native kernel and the OpenCL register-tile kernels on CPU devices, the
// work-group kernel on others), CLBlast, and OpenBLAS on host arrays when libopenblas.so.0 loads
// (the CPU's reference). Square NN sizes 64..2048, the training step's shapes for `model` with
// `batch` sequences per device, and per implementation a row "step" summing every GEMM of the
// step (each shape times its count). The plot's reference line is the best GFLOP/s measured.
Table bench_gemm(device::Device& device, device::ProgramCache& cache, const models::GptConfig& model, int batch,
                 bool quick);
double peak_of(const Table& gemm);  // its best GFLOP/s on the device (OpenBLAS's host rows left out)

// Decoding speed of an experiment's model (random weights) through its key/value caches
// (sampling/generate.h, greedy): per batch of sequences side by side, a prompt of `prompt_len`
// tokens (prefill tokens/s) then `steps` tokens each (ms per step, tokens/s over the batch), with
// activations (and the weights' copy) in `act`.
Table bench_decode(device::Device& device, device::ProgramCache& cache, const models::ModelConfig& model,
                   const std::vector<int>& batches, int prompt_len, int steps, device::DType act);

// Device memory bandwidth (copy, triad a = b + s c) and host<->device transfers, GB/s vs size.
Table bench_memory(device::Device& device, device::ProgramCache& cache, bool quick);

// Kernel launch latency: an empty kernel, one at a time (launch + wait) and back to back.
Table bench_launch(device::Device& device, device::ProgramCache& cache);

// clFFT: batched 1-D complex (C2C) and real (R2C) single-precision transforms, 2^8..2^20 points,
// in GFLOP/s by the usual 5 N log2 N (complex) and 2.5 N log2 N (real) convention.
Table bench_fft(device::Device& device, bool quick);

// All-reduce over this process's devices, ring and host-staged, algorithm and bus bandwidth.
Table bench_collectives(const std::vector<device::DeviceInfo>& devices, bool quick);

// Training: `pax-ocl train` runs (this binary) over experiments x PERCORE_BATCH_SIZE x ICI
// meshes, `steps` steps each: tokens/s, step time, MFU and the training state's memory per device.
Table bench_training(const std::string& binary, const std::vector<std::string>& experiments,
                     const std::vector<std::string>& batches, const std::vector<std::string>& meshes, int steps,
                     const std::string& extra_flags);

}  // namespace paxocl::bench
