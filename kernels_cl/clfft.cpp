#include "kernels_cl/clfft.h"

#include <mutex>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/announce_once.h"
#include "common/errors.h"

namespace paxocl::kernels {

namespace {
std::mutex& fft_mutex() {
  static std::mutex mutex;
  return mutex;
}
int library_references = 0;  // guarded by fft_mutex()

// Under the lock: a reference to clFFT's state, setting it up for the first.
void add_reference() {
  if (library_references == 0) {
    clfftSetupData setup;
    check_fft(clfftInitSetupData(&setup), "clfftInitSetupData");
    check_fft(clfftSetup(&setup), "clfftSetup");
  }
  ++library_references;
}
}  // namespace

void check_fft(clfftStatus status, const char* call) {
  if (status != CLFFT_SUCCESS) {
    throw DeviceError(fmt::format("{} failed with clFFT status {}", call, static_cast<int>(status)));
  }
}

FftLibrary::FftLibrary() {
  const std::lock_guard lock(fft_mutex());
  add_reference();
}

FftLibrary::FftLibrary(const FftLibrary&) {
  const std::lock_guard lock(fft_mutex());
  add_reference();
}

FftLibrary::~FftLibrary() {
  const std::lock_guard lock(fft_mutex());
  if (--library_references == 0) clfftTeardown();
}

FftPlan::FftPlan(const device::Context& context, FftKind kind, std::size_t n, std::size_t batch) : kind_(kind) {
  const std::lock_guard lock(fft_mutex());
  check_fft(clfftCreateDefaultPlan(&plan_, context.get(), CLFFT_1D, &n), "clfftCreateDefaultPlan");
  try {
    check_fft(clfftSetPlanPrecision(plan_, CLFFT_SINGLE), "clfftSetPlanPrecision");
    check_fft(clfftSetResultLocation(plan_, CLFFT_OUTOFPLACE), "clfftSetResultLocation");
    check_fft(clfftSetPlanBatchSize(plan_, batch), "clfftSetPlanBatchSize");
    const std::size_t half = n / 2 + 1;  // a real transform's Hermitian half
    switch (kind) {
      case FftKind::kComplex:
        check_fft(clfftSetLayout(plan_, CLFFT_COMPLEX_INTERLEAVED, CLFFT_COMPLEX_INTERLEAVED), "clfftSetLayout");
        check_fft(clfftSetPlanDistance(plan_, n, n), "clfftSetPlanDistance");
        break;
      case FftKind::kRealToComplex:
        check_fft(clfftSetLayout(plan_, CLFFT_REAL, CLFFT_HERMITIAN_INTERLEAVED), "clfftSetLayout");
        check_fft(clfftSetPlanDistance(plan_, n, half), "clfftSetPlanDistance");
        break;
      case FftKind::kComplexToReal:
        check_fft(clfftSetLayout(plan_, CLFFT_HERMITIAN_INTERLEAVED, CLFFT_REAL), "clfftSetLayout");
        check_fft(clfftSetPlanDistance(plan_, half, n), "clfftSetPlanDistance");
        check_fft(clfftSetPlanScale(plan_, CLFFT_BACKWARD, 1.0f / static_cast<float>(n)), "clfftSetPlanScale");
        break;
    }
  } catch (...) {
    clfftDestroyPlan(&plan_);
    throw;
  }
}

FftPlan::~FftPlan() {
  const std::lock_guard lock(fft_mutex());
  clfftDestroyPlan(&plan_);
}

void FftPlan::bake(device::Queue& queue) {
  const std::lock_guard lock(fft_mutex());
  cl_command_queue q = queue.get();
  check_fft(clfftBakePlan(plan_, 1, &q, nullptr, nullptr), "clfftBakePlan");
}

void FftPlan::enqueue(device::Queue& queue, cl_mem in, cl_mem out) {
  const std::lock_guard lock(fft_mutex());
  cl_command_queue q = queue.get();
  const clfftDirection direction = kind_ == FftKind::kComplexToReal ? CLFFT_BACKWARD : CLFFT_FORWARD;
  check_fft(clfftEnqueueTransform(plan_, direction, 1, &q, 0, nullptr, nullptr, &in, &out, nullptr),
            "clfftEnqueueTransform");
}

FftPlan& FftPlanCache::get(device::Device& device, FftKind kind, std::size_t n, std::size_t batch) {
  const Key key{device.context().get(), device.queue().get(), kind, n, batch};
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    if (announce_once(fmt::format("clfft bake {} {}", fmt::ptr(device.info().id), n))) {
      spdlog::info("clFFT on {}: baking plans of {} points (clFFT compiles their kernels)", device.info().name, n);
    }
    auto plan = std::make_unique<FftPlan>(device.context(), kind, n, batch);
    plan->bake(device.queue());
    it = plans_.emplace(key, std::move(plan)).first;
  }
  return *it->second;
}

}  // namespace paxocl::kernels
