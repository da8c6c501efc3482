// MfuPeaks: the two peaks a training job's MFU is measured against, job-wide, in GFLOP/s; MFU
// cannot exceed 100% against either:
//   measured:    the best GEMM rate seen on this kind of device computing as the job does
//                (float32, TF32, bfloat16, float16): square GEMMs of 1024 to 4096 on the job's GEMM
//                with its operand dtype at start-up, or a step that beat them. Stored per device
//                fingerprint and compute beside the program cache
//                (gemm-peak-<fingerprint>-<compute>.txt) and only ever raised; per device, times
//                measured_device_count() (CPU devices of one host share its cores, as for the
//                theoretical peak: two PoCL CPU devices of a 2-thread host are one device's worth).
//   theoretical: device::theoretical_peak (a datasheet, or cores x clock x lanes x FMA for a CPU)
//                over the job's devices, CPU devices of one host sharing its cores; 0 when some
//                device's is unknown; raised to the measured peak when that is higher (a clock
//                above the one the device reports).
// observe() raises a peak that a step's model FLOP rate exceeded, with a warning naming both.
#pragma once

#include <filesystem>
#include <string>

#include "collectives/process_world.h"
#include "config/job_config.h"
#include "scheduler/step_program.h"

namespace paxocl::scheduler {

// How many times one device's measured GEMM rate the job can run at: its devices, except that CPU
// devices share their host's `host_threads` (a CPU device measured alone ran on its
// `device_compute_units` of them): per host at most host_threads / device_compute_units devices'
// worth. `local_devices` per process, `local_size` processes per host, `processes` in all.
double measured_device_count(bool cpu, unsigned device_compute_units, unsigned host_threads, int local_devices,
                             int processes, int local_size);

class MfuPeaks {
 public:
  // Measures the GEMM (every process) and reads / raises the stored best; `store_dir` empty:
  // nothing is stored.
  MfuPeaks(StepProgram& program, const config::JobConfig& job, const collectives::ProcessWorld& world,
           const std::filesystem::path& store_dir);

  double measured() const { return per_device_measured_ * devices_; }
  double measured_now() const { return measured_now_ * devices_; }  // this run's start-up GEMM
  double theoretical() const { return theoretical_; }                // 0: unknown
  const std::string& theoretical_basis() const { return theoretical_basis_; }

  // A step's (or interval's) model FLOP rate: raises either peak below it.
  void observe(double achieved_gflops);
  double mfu(double achieved_gflops) const { return achieved_gflops / measured(); }
  double mfu_theoretical(double achieved_gflops) const { return theoretical_ > 0 ? achieved_gflops / theoretical_ : 0; }

 private:
  void store() const;

  std::filesystem::path file_;  // empty: not stored
  double devices_ = 1;  // measured_device_count()
  double per_device_measured_ = 0, measured_now_ = 0, theoretical_ = 0;
  std::string theoretical_basis_;
};

}  // namespace paxocl::scheduler
