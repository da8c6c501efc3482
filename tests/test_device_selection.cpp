// --devices / PAX_OCL_DEVICES parsing and selection, on synthetic device lists (so GPU cases are
// covered on a CPU-only machine).
#include <algorithm>
#include <thread>

#include <gtest/gtest.h>

#include "common/errors.h"
#include "common/host_fma_rate.h"
#include "common/host_isa.h"
#include "device/auto_fprop_dtype.h"
#include "device/device.h"
#include "device/device_fingerprint.h"
#include "device/device_selection.h"
#include "device/known_peaks.h"
#include "scheduler/mfu_peaks.h"
#include "tests/test_support.h"

namespace paxocl::device {
namespace {

std::vector<DeviceInfo> host(std::initializer_list<DeviceKind> kinds) {
  std::vector<DeviceInfo> all;
  for (DeviceKind k : kinds) {
    DeviceInfo d;
    d.index = static_cast<int>(all.size());
    d.kind = k;
    d.name = to_string(k);
    all.push_back(d);
  }
  return all;
}

std::vector<int> indices(const std::vector<DeviceInfo>& devices) {
  std::vector<int> out;
  for (const auto& d : devices) out.push_back(d.index);
  return out;
}

std::vector<int> select(const std::vector<DeviceInfo>& all, const std::string& spec) {
  return indices(select_devices(all, parse_device_selection(spec)));
}

std::string error_of(const std::vector<DeviceInfo>& all, const std::string& spec) {
  try {
    select(all, spec);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(DeviceSelection, AutoPrefersGpusAndAccelerators) {
  const auto all = host({DeviceKind::kCpu, DeviceKind::kGpu, DeviceKind::kAccelerator, DeviceKind::kGpu});
  EXPECT_EQ(select(all, "auto"), (std::vector<int>{1, 2, 3}));
}

TEST(DeviceSelection, AutoFallsBackToCpus) {
  EXPECT_EQ(select(host({DeviceKind::kCpu, DeviceKind::kCpu}), "auto"), (std::vector<int>{0, 1}));
}

TEST(DeviceSelection, ByKind) {
  const auto all = host({DeviceKind::kCpu, DeviceKind::kGpu, DeviceKind::kCpu});
  EXPECT_EQ(select(all, "gpu"), (std::vector<int>{1}));
  EXPECT_EQ(select(all, "cpu"), (std::vector<int>{0, 2}));
}

TEST(DeviceSelection, ByIndicesAndRangesInTheOrderGiven) {
  const auto all = host({DeviceKind::kGpu, DeviceKind::kGpu, DeviceKind::kGpu, DeviceKind::kGpu, DeviceKind::kCpu});
  EXPECT_EQ(select(all, "2,0"), (std::vector<int>{2, 0}));
  EXPECT_EQ(select(all, "0-3"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(select(all, "4,0-1"), (std::vector<int>{4, 0, 1}));
}

TEST(DeviceSelection, ErrorsNameTheProblem) {
  const auto cpus = host({DeviceKind::kCpu, DeviceKind::kCpu});
  EXPECT_NE(error_of(cpus, "gpu").find("no GPU among this host's OpenCL devices (2 cpu)"), std::string::npos);
  EXPECT_NE(error_of(cpus, "5").find("index 5 is out of range; this host has 2 OpenCL device(s) (0-1)"),
            std::string::npos);
  EXPECT_NE(error_of(cpus, "0,0").find("device 0 is listed twice"), std::string::npos);
  EXPECT_NE(error_of(cpus, "1-0").find("runs backwards"), std::string::npos);
  EXPECT_NE(error_of(cpus, "fast").find("'fast' is not a device index"), std::string::npos);
  EXPECT_NE(error_of(cpus, "0,").find("'' is not a device index"), std::string::npos);
  EXPECT_NE(error_of(cpus, "-1").find("is not a device index"), std::string::npos);
}

TEST(DeviceSelection, FlagBeatsEnvironmentBeatsAuto) {
  {
    testing::ScopedEnv env(kDevicesEnvVar, std::nullopt);
    EXPECT_EQ(device_spec_from(std::nullopt), "auto");
  }
  testing::ScopedEnv env(kDevicesEnvVar, "cpu");
  EXPECT_EQ(device_spec_from(std::nullopt), "cpu");
  EXPECT_EQ(device_spec_from(std::string("0,1")), "0,1");
}

// FPROP_DTYPE=auto: bfloat16 only where every device is a CPU with bfloat16 matrix instructions and
// native kernels, and the measured bfloat16 GEMM beats float32's by kBf16MinGemmSpeedup; one CPU
// without them, any GPU, a slower bfloat16 GEMM or a GEMM policy that widens 16-bit operands keeps
// the job in float32, and the reason names that device, policy or measurement.
TEST(AutoFpropDtype, BfloatSixteenOnlyWhereEveryDeviceIsACpuWithItsInstructionsAndItMeasuresFaster) {
  DeviceInfo amx, avx2, gpu;
  amx.name = "pthread-sapphirerapids-Intel(R) Xeon(R) Processor";
  amx.kind = DeviceKind::kCpu;
  amx.compute_units = 4;
  amx.native_kernels = true;
  amx.bf16_flops_per_cycle = cpu_bf16_flops_per_cycle(true, true, 16);
  avx2.name = "pthread-haswell-AMD EPYC";
  avx2.kind = DeviceKind::kCpu;
  avx2.native_kernels = true;
  gpu.name = "NVIDIA H100";
  gpu.kind = DeviceKind::kGpu;
  gpu.bf16_flops_per_cycle = 1024;  // not read for GPUs

  std::vector<unsigned> probed_threads;
  const auto rates = [&probed_threads](double bf16, double f32) {
    return [&probed_threads, bf16, f32](unsigned threads) {
      probed_threads.push_back(threads);
      return Bf16GemmRates{bf16, f32, "a test's rates"};
    };
  };
  const AutoFpropDtype faster = auto_fprop_dtype({amx, amx}, "auto", rates(900, 300));
  EXPECT_EQ(faster.dtype, DType::kBF16);
  EXPECT_NE(faster.reason.find("AMX-BF16 or AVX512_BF16"), std::string::npos) << faster.reason;
  EXPECT_NE(faster.reason.find("3.00x float32's (900 against 300 GFLOP/s"), std::string::npos) << faster.reason;
  EXPECT_EQ(probed_threads, std::vector<unsigned>{2}) << "4 compute units shared by 2 CPU devices";
  OpenCpuDevice::set_processes_on_host(2);  // two MPI ranks on the host probe at once, as they train
  auto_fprop_dtype({amx, amx}, "auto", rates(900, 300));
  OpenCpuDevice::set_processes_on_host(1);
  EXPECT_EQ(probed_threads, (std::vector<unsigned>{2, 1})) << "4 compute units shared by 2 devices x 2 processes";
  EXPECT_EQ(auto_fprop_dtype({amx}, "onednn", rates(400, 300)).dtype, DType::kBF16);

  // The instructions are there, the speed is not (an Intel Xeon without AMX: 170 against 300).
  const AutoFpropDtype slower = auto_fprop_dtype({amx}, "auto", rates(170, 300));
  EXPECT_EQ(slower.dtype, DType::kF32);
  EXPECT_NE(slower.reason.find("0.57x float32's"), std::string::npos) << slower.reason;
  EXPECT_EQ(auto_fprop_dtype({amx}, "auto", rates(kBf16MinGemmSpeedup * 300 - 1, 300)).dtype, DType::kF32);
  EXPECT_EQ(auto_fprop_dtype({amx}, "auto", rates(kBf16MinGemmSpeedup * 300 + 1, 300)).dtype, DType::kBF16);
  const AutoFpropDtype none = auto_fprop_dtype({amx}, "auto", [](unsigned) {
    return Bf16GemmRates{0, 0, "only a reference matmul"};
  });
  EXPECT_EQ(none.dtype, DType::kF32);
  EXPECT_NE(none.reason.find("only a reference matmul"), std::string::npos) << none.reason;

  // Decided without measuring: no instructions, a GPU, no native kernels, a widening policy.
  probed_threads.clear();
  const AutoFpropDtype mixed = auto_fprop_dtype({amx, avx2}, "auto", rates(900, 300));
  EXPECT_EQ(mixed.dtype, DType::kF32);
  EXPECT_NE(mixed.reason.find(avx2.name), std::string::npos) << mixed.reason;
  const AutoFpropDtype on_gpu = auto_fprop_dtype({gpu}, "auto", rates(900, 300));
  EXPECT_EQ(on_gpu.dtype, DType::kF32);
  EXPECT_NE(on_gpu.reason.find("not a CPU device"), std::string::npos) << on_gpu.reason;
  DeviceInfo amx_no_native = amx;
  amx_no_native.native_kernels = false;
  EXPECT_EQ(auto_fprop_dtype({amx_no_native}, "auto", rates(900, 300)).dtype, DType::kF32);
  EXPECT_EQ(auto_fprop_dtype({}, "auto", rates(900, 300)).dtype, DType::kF32);
  for (const char* float32_only : {"blis", "clblast", "cpu-8x48", "gpu-64x64"}) {
    const AutoFpropDtype chosen = auto_fprop_dtype({amx}, float32_only, rates(900, 300));
    EXPECT_EQ(chosen.dtype, DType::kF32) << float32_only;
    EXPECT_NE(chosen.reason.find(std::string("--gemm=") + float32_only), std::string::npos) << chosen.reason;
  }
  EXPECT_TRUE(probed_threads.empty());
}

}  // namespace
}  // namespace paxocl::device

namespace paxocl::device {
namespace {

// What is tuned or built for a device and kept on disk is keyed by its fingerprint: PoCL names a
// CPU device by its compiler target alone, so a CPU device's also holds the host's instruction
// sets, and every device's its compute units (2 cores or 64, a MIG slice or the whole GPU).
TEST(DeviceFingerprint, TellsComputeUnitsAndACpuHostsInstructionSetsApart) {
  DeviceInfo cpu;
  cpu.kind = DeviceKind::kCpu;
  cpu.name = "pthread-skylake-avx512-Intel(R) Xeon(R) Processor";
  cpu.vendor = "GenuineIntel";
  cpu.compute_units = 2;
  DeviceInfo bigger = cpu;
  bigger.compute_units = 64;
  EXPECT_NE(device_fingerprint(bigger), device_fingerprint(cpu));
  EXPECT_EQ(device_identity(cpu).find("avx512") != std::string::npos, paxocl::host_isa().avx512) << device_identity(cpu);
  DeviceInfo gpu = cpu;
  gpu.kind = DeviceKind::kGpu;
  EXPECT_EQ(device_identity(gpu), "pthread-skylake-avx512-Intel(R) Xeon(R) Processor|GenuineIntel|||2 CUs");
  EXPECT_EQ(device_identity(cpu).rfind(device_identity(gpu) + "|", 0), 0u) << device_identity(cpu);
}

// The list is part of every CPU device's cache key: its names and order must not drift.
TEST(HostIsa, ListsTheSetsInAFixedOrderWithoutF16c) {
  paxocl::HostIsa isa;
  EXPECT_EQ(paxocl::host_isa_list(isa), "");
  isa.amx_bf16 = true;
  isa.avx2_fma = true;
  isa.f16c = true;
  EXPECT_EQ(paxocl::host_isa_list(isa), "avx2,amx-bf16");
  isa.avx512 = isa.avx512_bf16 = true;
  EXPECT_EQ(paxocl::host_isa_list(isa), "avx2,avx512,avx512bf16,amx-bf16");
  // Every CPU with AVX-512 F/DQ/BW/VL has AVX2, FMA and F16C; bfloat16 instructions come after AVX-512.
  const paxocl::HostIsa& here = paxocl::host_isa();
  EXPECT_TRUE(!here.avx512 || (here.avx2_fma && here.f16c));
  EXPECT_TRUE(!here.amx_bf16 || here.avx512);
}

// The measured float32 FMA rate lies in what a core can physically do with the vectors the host
// has: per thread at least lanes x 2 flops at 0.5 GHz on one FMA port, at most lanes x 2 flops x
// 2 ports at 6 GHz (a rate counted per chain or per lane wrongly lands outside). No vectors to
// measure: 0.
TEST(HostFmaRate, LiesInWhatTheHostsVectorsCanDo) {
  const paxocl::HostIsa& isa = paxocl::host_isa();
  const double one_thread = paxocl::measure_host_fma_gflops(1);
  if (!isa.avx512 && !isa.avx2_fma) {
    EXPECT_EQ(one_thread, 0.0);
    return;
  }
  const double lanes = isa.avx512 ? 16 : 8;
  EXPECT_GT(one_thread, 0.5 * lanes * 2) << "GFLOP/s";
  EXPECT_LT(one_thread, 6.0 * lanes * 2 * 2) << "GFLOP/s";
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  EXPECT_LT(paxocl::measure_host_fma_gflops(threads), threads * 6.0 * lanes * 2 * 2) << "GFLOP/s";
}

TEST(KnownPeaks, MatchTheMostSpecificModelOnly) {
  EXPECT_EQ(known_peak("NVIDIA H100 PCIe")->model, "NVIDIA H100 PCIe");
  EXPECT_EQ(known_peak("NVIDIA H100 80GB HBM3")->model, "NVIDIA H100 SXM5");
  EXPECT_DOUBLE_EQ(known_peak("NVIDIA H200")->bf16_tflops, 989.4);
  EXPECT_EQ(known_peak("NVIDIA A100-SXM4-80GB")->model, "NVIDIA A100");
  EXPECT_EQ(known_peak("NVIDIA A10")->model, "NVIDIA A10");
  EXPECT_FALSE(known_peak("pthread-skylake-avx512-AMD EPYC").has_value());
  EXPECT_FALSE(known_peak("").has_value());
  for (const KnownPeak& p : known_peaks()) EXPECT_GT(p.bf16_tflops, p.fp32_tflops) << p.model;
}

// The MFU's theoretical peak by what the GEMMs compute in: NVIDIA's datasheet figures for an H100
// SXM (FP32 67, dense TF32 494.7, dense BF16 989.4 TFLOP/s) and an A100 (19.5, 156, 312).
TEST(KnownPeaks, TheoreticalPeakFollowsTheComputePrecision) {
  DeviceInfo h100;
  h100.name = "NVIDIA H100 80GB HBM3";
  h100.kind = DeviceKind::kGpu;
  EXPECT_DOUBLE_EQ(theoretical_peak(h100, PeakCompute::kFloat32, 16).gflops, 67000.0);
  EXPECT_DOUBLE_EQ(theoretical_peak(h100, PeakCompute::kTf32, 16).gflops, 494700.0);
  EXPECT_DOUBLE_EQ(theoretical_peak(h100, PeakCompute::kBFloat16, 16).gflops, 989400.0);
  EXPECT_DOUBLE_EQ(theoretical_peak(h100, PeakCompute::kFloat16, 16).gflops, 989400.0);
  EXPECT_NE(theoretical_peak(h100, PeakCompute::kTf32, 16).basis.find("TF32"), std::string::npos);
  DeviceInfo a100;
  a100.name = "NVIDIA A100-SXM4-80GB";
  a100.kind = DeviceKind::kGpu;
  EXPECT_DOUBLE_EQ(theoretical_peak(a100, PeakCompute::kTf32, 16).gflops, 156000.0);
}

// A CPU device's bfloat16 peak from its bfloat16 instructions (Intel's figures: AMX 1024 BF16
// FLOPs per core per cycle; VDPBF16PS twice the float32 FMA rate); float16, and bfloat16 on a CPU
// without them, at the float32 peak.
TEST(KnownPeaks, CpuBfloat16PeakFollowsItsInstructions) {
  EXPECT_EQ(cpu_bf16_flops_per_cycle(true, true, 16), 1024u);
  EXPECT_EQ(cpu_bf16_flops_per_cycle(false, true, 16), 128u);
  EXPECT_EQ(cpu_bf16_flops_per_cycle(false, false, 16), 0u);
  DeviceInfo cpu;
  cpu.name = "pthread-sapphirerapids-Intel(R) Xeon(R) Processor";
  cpu.kind = DeviceKind::kCpu;
  cpu.compute_units = 2;
  cpu.clock_mhz = 2000;
  cpu.native_float_lanes = 16;
  EXPECT_DOUBLE_EQ(theoretical_peak(cpu, PeakCompute::kBFloat16, 2).gflops, 2 * 2.0 * 16 * 2 * 2);  // no bf16 units known
  cpu.bf16_flops_per_cycle = cpu_bf16_flops_per_cycle(true, true, 16);
  EXPECT_DOUBLE_EQ(theoretical_peak(cpu, PeakCompute::kFloat32, 2).gflops, 2 * 2.0 * 16 * 2 * 2);
  EXPECT_DOUBLE_EQ(theoretical_peak(cpu, PeakCompute::kFloat16, 2).gflops, 2 * 2.0 * 16 * 2 * 2);
  EXPECT_DOUBLE_EQ(theoretical_peak(cpu, PeakCompute::kBFloat16, 2).gflops, 2 * 2.0 * 1024);
  EXPECT_NE(theoretical_peak(cpu, PeakCompute::kBFloat16, 2).basis.find("AMX"), std::string::npos);
  EXPECT_DOUBLE_EQ(theoretical_peak(cpu, PeakCompute::kBFloat16, 1).gflops, 2.0 * 1024);  // one host thread
}


// The measured GEMM peak scales with the job's devices, but CPU devices of one host share its
// threads as in the theoretical peak: two PoCL CPU devices (each measured alone on all 2 threads
// of a 2-thread host) are one device's worth, not two (the banner read "measured 418.1 GFLOP/s in
// all" beside a theoretical 332.3); GPUs count each.
TEST(MfuPeaks, MeasuredDeviceCountSharesAHostsCpuThreads) {
  using scheduler::measured_device_count;
  EXPECT_DOUBLE_EQ(measured_device_count(true, 2, 2, 2, 1, 1), 1.0);
  EXPECT_DOUBLE_EQ(measured_device_count(true, 2, 2, 1, 1, 1), 1.0);
  EXPECT_DOUBLE_EQ(measured_device_count(true, 2, 2, 1, 2, 2), 1.0);   // two processes on one host
  EXPECT_DOUBLE_EQ(measured_device_count(true, 2, 2, 1, 4, 2), 2.0);   // two hosts of two processes
  EXPECT_DOUBLE_EQ(measured_device_count(true, 4, 16, 2, 1, 1), 2.0);  // devices of 4 of 16 threads: room for 4
  EXPECT_DOUBLE_EQ(measured_device_count(true, 4, 16, 8, 1, 1), 4.0);
  EXPECT_DOUBLE_EQ(measured_device_count(false, 132, 16, 8, 2, 1), 16.0);  // GPUs: every device
}

}  // namespace
}  // namespace paxocl::device
