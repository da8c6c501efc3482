#include "scheduler/mfu_peaks.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/atomic_file.h"
#include "device/device_fingerprint.h"
#include "device/known_peaks.h"

namespace paxocl::scheduler {

namespace {

// GFLOP/s of square GEMMs on the model's GEMM with the model's operand dtype (A, B and C in `act`),
// best of 3 after a warm-up: 1024^3, then 2048^3 and 4096^3 while a call takes under 5 ms. A GPU
// reaches its GEMM speed only at the larger sizes (a 1024^3 GEMM leaves most of an H100's SMs idle
// in its last wave); a CPU of a few cores stays at 1024^3, whose call already takes longer, so
// start-up grows by tens of milliseconds at most.
double measure_gemm(device::Device& dev, kernels::Gemm& gemm, device::DType act) {
  double best_gflops = 0;
  for (std::size_t n = 1024; n <= 4096; n *= 2) {
    device::Buffer<float> a(dev.context(), n * n, "peak.a"), b(dev.context(), n * n, "peak.b"), c(dev.context(), n * n, "peak.c");
    const kernels::GemmShape s{kernels::Transpose::kNo, kernels::Transpose::kYes, n, n, n};
    double best = 1e30;
    for (int i = 0; i < 4; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      gemm.run(s, 1.0f, {a.get(), 0, n, 0, act}, {b.get(), 0, n, 0, act}, 0.0f, {c.get(), 0, n, 0, act});
      dev.queue().finish();
      if (i > 0) best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    best_gflops = std::max(best_gflops, 2.0 * static_cast<double>(n * n * n) / best / 1e9);
    if (best > 0.005) break;
  }
  return best_gflops;
}

double read_stored(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return 0.0;  // no record; a FIFO would block the open below
  std::ifstream in(file);
  double v = 0;
  return in >> v && v > 0 && v < 1e9 ? v : 0.0;  // anything unreadable is no record
}

// How the job's GEMMs compute: the peaks are per kind (a TF32 or bfloat16 GEMM's speed is no
// measure of a float32 job).
device::PeakCompute job_compute(const StepProgram& program, const config::JobConfig& job) {
  return job.step.fprop_dtype == device::DType::kBF16  ? device::PeakCompute::kBFloat16
         : job.step.fprop_dtype == device::DType::kF16 ? device::PeakCompute::kFloat16
         : program.runtime().float32_on_tensor_cores() ? device::PeakCompute::kTf32
                                                        : device::PeakCompute::kFloat32;
}

// Theoretical GFLOP/s of the job: each process's devices, CPU devices sharing their host's cores
// (processes on one host too); 0 when a device's peak is unknown.
std::pair<double, std::string> job_theoretical(const StepProgram& program, device::PeakCompute compute,
                                               const collectives::ProcessWorld& world) {
  const unsigned host_threads = std::max(1u, std::thread::hardware_concurrency());
  double accelerators = 0, cpus = 0;
  std::string basis;
  const device::DeviceInfo* cpu = nullptr;
  for (const device::Device* d : program.devices()) {
    const device::TheoreticalPeak p = device::theoretical_peak(d->info(), compute, host_threads);
    if (p.gflops <= 0) return {0.0, "unknown for " + d->info().name};
    if (d->info().kind == device::DeviceKind::kCpu) {
      cpus += p.gflops;
      cpu = &d->info();
    } else {
      accelerators += p.gflops;
    }
    if (basis.empty()) basis = p.basis;
  }
  if (cpu != nullptr) {  // this host's CPU, whole: the cap for every CPU device of every process here
    device::DeviceInfo host = *cpu;
    host.compute_units = host_threads;
    const double host_peak = device::theoretical_peak(host, compute, host_threads).gflops;
    const int hosts = std::max(1, world.size() / std::max(1, world.local_size()));
    cpus = hosts * std::min(cpus * world.local_size(), host_peak);
    basis = fmt::format("{} per device; a host's CPU devices share its {} threads", basis, host_threads);
    return {accelerators * world.size() + cpus, basis};
  }
  return {accelerators * world.size(), basis};
}

}  // namespace

double measured_device_count(bool cpu, unsigned device_compute_units, unsigned host_threads, int local_devices,
                             int processes, int local_size) {
  const double devices = static_cast<double>(local_devices) * processes;
  if (!cpu) return devices;
  const int per_host = std::max(1, local_size);
  const double hosts = std::max(1, processes / per_host);
  const double host_cap = static_cast<double>(std::max(1u, host_threads)) / std::max(1u, device_compute_units);
  return hosts * std::min(static_cast<double>(local_devices) * per_host, std::max(1.0, host_cap));
}

MfuPeaks::MfuPeaks(StepProgram& program, const config::JobConfig& job, const collectives::ProcessWorld& world,
                   const std::filesystem::path& store_dir)
    : devices_(measured_device_count(program.device().info().kind == device::DeviceKind::kCpu,
                                     program.device().info().compute_units,
                                     std::max(1u, std::thread::hardware_concurrency()), job.mesh.local_devices(),
                                     world.size(), world.local_size())) {
  const device::PeakCompute compute = job_compute(program, job);
  measured_now_ = measure_gemm(program.device(), program.runtime().gemm(), job.step.fprop_dtype);
  if (!store_dir.empty()) {
    file_ = store_dir / fmt::format("gemm-peak-{:016x}-{}.txt", device::device_fingerprint(program.device().info()),
                                    device::peak_compute_name(compute));
  }
  const double stored = file_.empty() ? 0.0 : read_stored(file_);
  per_device_measured_ = std::max(stored, measured_now_);
  if (measured_now_ > stored) store();
  std::tie(theoretical_, theoretical_basis_) = job_theoretical(program, compute, world);
  // A GEMM that beat the theoretical peak shows its clock or core count wrong (a VM's turbo clock
  // above the one it reports): raised as a step that beats it raises it, so neither MFU passes 100%.
  // Not a warning: nothing is wrong with the job, and the start-up line shows the basis.
  if (theoretical_ > 0 && measured() > theoretical_) {
    theoretical_basis_ += fmt::format("; raised from {:.1f} to the measured GEMM peak", theoretical_);
    theoretical_ = measured();
  }
}

void MfuPeaks::observe(double achieved_gflops) {
  if (achieved_gflops > measured()) {
    spdlog::warn("the step ran at {:.1f} GFLOP/s, above the best measured GEMM peak {:.1f}: the peak is raised",
                 achieved_gflops, measured());
    per_device_measured_ = achieved_gflops / devices_;
    store();
  }
  if (theoretical_ > 0 && achieved_gflops > theoretical_) {
    spdlog::warn("the step ran at {:.1f} GFLOP/s, above the theoretical peak {:.1f} ({}): the peak is raised",
                 achieved_gflops, theoretical_, theoretical_basis_);
    theoretical_ = achieved_gflops;
  }
}

void MfuPeaks::store() const {
  if (file_.empty()) return;
  try {
    write_file_atomically(file_, fmt::format("{:.3f}\n", per_device_measured_));
  } catch (const std::exception& e) {  // a read-only cache loses the record, not the job
    spdlog::warn("cannot store the measured GEMM peak: {}", e.what());
  }
}

}  // namespace paxocl::scheduler
