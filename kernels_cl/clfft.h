// clFFT (the OpenCL FFT library) in RAII. FftLibrary is a counted reference to clFFT's process-wide
// state (clfftSetup on the first, clfftTeardown when the last goes); FftPlan owns one baked-on-demand
// plan (single precision, out of place, batches contiguous) and keeps the library alive;
// FftPlanCache keeps one baked plan per (context, queue, kind, length, batch) and says in the log,
// once per device and length, that it is baking (clFFT compiles kernels: seconds). clFFT's calls are
// serialised through one process-wide mutex, so devices driven from several threads may make and
// run plans at once. Every failure throws DeviceError naming the call and clFFT's status.
#pragma once

#include <clFFT.h>

#include <cstddef>
#include <map>
#include <memory>
#include <tuple>

#include "device/device.h"

namespace paxocl::kernels {

// Throws DeviceError "<call> failed with clFFT status <n>" unless status is CLFFT_SUCCESS.
void check_fft(clfftStatus status, const char* call);

class FftLibrary {
 public:
  FftLibrary();  // sets clFFT up if no other reference is alive
  ~FftLibrary();
  FftLibrary(const FftLibrary&);
  FftLibrary& operator=(const FftLibrary&) = delete;
};

enum class FftKind {
  kComplex,        // (batch, n) complex -> (batch, n) complex, forward
  kRealToComplex,  // (batch, n) reals -> (batch, n/2 + 1) complex (Hermitian half), forward
  kComplexToReal,  // (batch, n/2 + 1) complex -> (batch, n) reals, backward, scaled by 1/n
};

class FftPlan {
 public:
  // `batch` transforms of `n` points on `context`'s devices; bake() before the first enqueue
  // (else clFFT bakes on first use).
  FftPlan(const device::Context& context, FftKind kind, std::size_t n, std::size_t batch);
  ~FftPlan();
  FftPlan(const FftPlan&) = delete;
  FftPlan& operator=(const FftPlan&) = delete;

  void bake(device::Queue& queue);  // compiles the plan's kernels for the queue's device
  // Enqueues the transform in -> out (distinct buffers) on `queue`, behind its earlier work.
  void enqueue(device::Queue& queue, cl_mem in, cl_mem out);

 private:
  FftLibrary library_;  // first member: the plan is destroyed before the library can be torn down
  FftKind kind_;
  clfftPlanHandle plan_ = 0;
};

class FftPlanCache {
 public:
  // The baked plan for this shape on `device`'s queue (made and baked on first request).
  FftPlan& get(device::Device& device, FftKind kind, std::size_t n, std::size_t batch);

 private:
  using Key = std::tuple<cl_context, cl_command_queue, FftKind, std::size_t, std::size_t>;
  std::map<Key, std::unique_ptr<FftPlan>> plans_;
};

}  // namespace paxocl::kernels
