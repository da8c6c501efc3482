#include "kernels_cl/auto_gemm.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "common/announce_once.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/host_fma_rate.h"
#include "device/device_fingerprint.h"
#include "device/known_peaks.h"
#include "device/typed_buffer.h"
#include "kernels_cl/blis_gemm.h"
#include "kernels_cl/host_gemm.h"
#include "kernels_cl/direct_gemm.h"
#include "kernels_cl/onednn_gemm.h"
#include "kernels_cl/packed_gemm.h"
#include "kernels_cl/tensor_core_gemm.h"

namespace paxocl::kernels {

namespace {

constexpr std::string_view kDirectPrefix = "gpu-direct-";

const std::vector<std::string>& variant_names() {
  static const std::vector<std::string> names = {"blis",      "onednn",     "clblast",    "cpu-8x48",
                                                     "cpu-12x32", "gpu-64x64",  "gpu-direct",
                                                     "tensor-core"};
  return names;
}

std::unique_ptr<Gemm> make_variant(device::Device& device, device::ProgramCache& cache, const std::string& name,
                                   MatmulPrecision precision = MatmulPrecision::kFloat32) {
  if (name == "tensor-core") {
    return std::make_unique<TensorCoreGemm>(cache, device, make_float32_accumulating_gemm(device, cache), std::nullopt,
                                            TensorCoreGemm::Mode::kPtx, precision);
  }
  if (name == "clblast") return make_clblast_gemm(device);
  if (name == "blis") return make_blis_gemm(device);
  if (name == "onednn") return make_onednn_gemm(device);
  if (name == "cpu-8x48") return std::make_unique<PackedGemm>(cache, device, GemmVariant{GemmVariant::Kind::kCpu, 8, 48});
  // "gpu-direct": the device's tuned (or default) tile; auto's candidate names its tile.
  if (name == "gpu-direct") return std::make_unique<DirectGemm>(cache, device);
  if (name.starts_with(kDirectPrefix)) {
    return std::make_unique<DirectGemm>(cache, device, DirectTile::parse(name.substr(kDirectPrefix.size())));
  }
  if (name == "cpu-12x32") return std::make_unique<PackedGemm>(cache, device, GemmVariant{GemmVariant::Kind::kCpu, 12, 32});
  return std::make_unique<PackedGemm>(cache, device, GemmVariant{GemmVariant::Kind::kGpu, 64, 64});
}

// The float32-accumulating auto's choices: gemm-choices-<device fingerprint>.txt.
constexpr const char* kGemmChoicesStem = "gemm-choices";

GemmFactory variant_factory(device::Device& device, device::ProgramCache& cache) {
  return [&device, &cache](const std::string& name) { return make_variant(device, cache, name); };
}

// The OpenCL register tiles on a CPU device compute in float32 FMAs whatever their operands' dtype,
// so they run at most at the host's float32 FMA rate on the device's compute units: measured
// (common/host_fma_rate.h), 1.25x it for the measurement's noise, or where nothing can be measured
// twice the theoretical peak, whose reported clock may be below the turbo one. A measurement
// below device::theoretical_peak's (which assumes two FMA ports of the widest vectors) is taken
// again 3 times, 30 ms apart, and the best one kept: a probe slowed by another process must not
// rule the tiles out where oneDNN runs below their real peak, and a core that has one port's
// worth of AVX-512 FMAs (a 2-core AMD EPYC with AVX-512: 2 x 256-bit pipes, half that peak) must
// not keep them in where oneDNN's bfloat16 matmul runs at 1.3x what they can do. Where oneDNN's
// bfloat16 matmul on AMX runs faster than the bound (0.4-2 TFLOP/s against 0.38-0.44 on a 2-core
// Xeon), the tiles are neither built nor timed. Measured at the first bound asked for (15-150
// ms), once per thread count in a process.
GemmRateBound opencl_tile_bound(const device::Device& device) {
  const unsigned host_threads = std::max(1u, std::thread::hardware_concurrency());
  const unsigned threads = std::clamp<unsigned>(device.info().compute_units, 1u, host_threads);
  const double clock_peak = device::theoretical_peak(device.info(), device::PeakCompute::kFloat32, host_threads).gflops;
  return [threads, clock_peak](const std::string& name) {
    if (!name.starts_with("cpu-")) return 0.0;
    static std::mutex mutex;
    static std::map<unsigned, double> measured;  // threads -> GFLOP/s
    std::lock_guard lock(mutex);
    auto it = measured.find(threads);
    if (it == measured.end()) {
      double gflops = measure_host_fma_gflops(threads);
      for (int retry = 0; retry < 3 && gflops > 0 && gflops < clock_peak; ++retry) {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        gflops = std::max(gflops, measure_host_fma_gflops(threads));
      }
      spdlog::debug("float32 FMA rate of {} host thread(s): {:.0f} GFLOP/s measured ({:.0f} by the reported clock)",
                    threads, gflops, clock_peak);
      it = measured.emplace(threads, gflops).first;
    }
    return it->second > 0 ? 1.25 * it->second : 2 * clock_peak;
  };
}

// "huge" past 4096: the LM head's vocabulary-long GEMMs get classes of their own instead of the
// choice a layer's GEMM made (timed at a k of 1536, an OpenCL tile can win a class whose k = 16384
// GEMM it then runs at half oneDNN's rate).
const char* bucket(std::size_t d) { return d <= 64 ? "64" : d <= 512 ? "512" : d <= 4096 ? "big" : "huge"; }

char dtype_letter(device::DType t) { return t == device::DType::kBF16 ? 'b' : t == device::DType::kF16 ? 'h' : 'f'; }

// Chooses per shape class among candidates; see auto_gemm.h.
class AutoGemm final : public Gemm {
 public:
  AutoGemm(device::Device& device, device::ProgramCache& cache, std::vector<std::string> candidates,
           GemmFactory make, const std::string& file_stem, GemmRateBound bound)
      : device_(device),
        cache_(cache),
        candidates_(std::move(candidates)),
        make_(std::move(make)),
        bound_(std::move(bound)) {
    const std::uint64_t fingerprint = device::device_fingerprint(device.info());
    if (!cache.dir().empty()) choices_file_ = cache.dir() / fmt::format("{}-{:016x}.txt", file_stem, fingerprint);
    std::lock_guard lock(registry_mutex());
    // Every AutoGemm of this process on such a device shares one table: two models (or devices) in
    // one process never differ in the GEMM they run, so their results agree bit for bit.
    auto& shared =
        registry()[fmt::format("{:016x} {} {} {}", fingerprint, file_stem, candidate_list(), choices_file_.string())];
    if (!shared) {
      shared = std::make_shared<std::map<std::string, std::string>>();
      if (!choices_file_.empty()) {
        // Choices made among other candidates (an older pax-ocl, say, before BLIS) are timed again.
        // Only a regular file: a FIFO would block the open, and anything else there is timed anew.
        std::error_code ec;
        std::ifstream in;
        if (std::filesystem::is_regular_file(choices_file_, ec)) in.open(choices_file_);
        std::string key, cls, variant;
        if (in >> key >> cls && key == "candidates" && cls == candidate_list()) {
          while (in >> cls >> variant) {
            if (std::find(candidates_.begin(), candidates_.end(), variant) != candidates_.end()) (*shared)[cls] = variant;
          }
        }
      }
    }
    choices_ = shared;
  }

  // A call with no element of C to write (no rows, columns, matrices or repetitions) enqueues
  // nothing, as every variant does; above all it neither times nor records a class at that shape.
  static bool writes_nothing(const GemmShape& s, std::size_t outer_count = 1) {
    return s.m == 0 || s.n == 0 || s.batch == 0 || outer_count == 0;
  }

  void run(const GemmShape& s, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
           const GemmOperand& c) override {
    if (writes_nothing(s)) return;
    chosen(s, a, b, c).run(s, alpha, a, b, beta, c);
  }
  // A class of its own (".outer"), timed with both batch levels: a GEMM that runs the outer
  // repetitions one by one pays a call for each, which a timing of the inner batch would hide.
  void run_outer(const GemmOuterBatch& outer, const GemmShape& s, float alpha, const GemmOperand& a,
                 const GemmOperand& b, float beta, const GemmOperand& c) override {
    if (writes_nothing(s, outer.count)) return;
    if (outer.count == 1) return run(s, alpha, a, b, beta, c);
    chosen(s, a, b, c, outer.count).run_outer(outer, s, alpha, a, b, beta, c);
  }
  // The class's choice fuses the epilogue if it can (the direct GEMM); timing ignores epilogues.
  bool run_fused(const GemmShape& s, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
                 const GemmOperand& c, const GemmEpilogue& epilogue) override {
    if (writes_nothing(s)) return true;  // the epilogue of no element is applied
    return chosen(s, a, b, c).run_fused(s, alpha, a, b, beta, c, epilogue);
  }

  std::string name() const override { return "auto"; }
  bool supports(device::DType, device::DType, device::DType) const override { return true; }  // a packed GEMM takes any
  void set_profiling(bool on) override { profiling_ = on; }
  GemmStats stats() override {
    GemmStats total;
    for (auto& [name, g] : variants_) {
      total.calls += g->stats().calls;
      total.device_ms += g->stats().device_ms;
    }
    return total;
  }
  void reset_stats() override {
    for (auto& [name, g] : variants_) g->reset_stats();
  }

 private:
  // The variant for this call's shape class (timed at the class's first call), profiling set.
  Gemm& chosen(const GemmShape& s, const GemmOperand& a, const GemmOperand& b, const GemmOperand& c,
               std::size_t outer = 1) {
    GemmShape whole = s;
    whole.batch = s.batch * outer;
    std::string cls = gemm_shape_class(whole);
    if (outer > 1) cls += ".outer";
    if (!all_float32(a.dtype, b.dtype, c.dtype)) cls += fmt::format(".{}{}{}", dtype_letter(a.dtype), dtype_letter(b.dtype), dtype_letter(c.dtype));
    const std::string choice = choice_for(cls, s, outer, a.dtype, b.dtype, c.dtype);
    if (announce_once(fmt::format("gemm {} {}", fmt::ptr(device_.info().id), choice))) {
      spdlog::info("GEMM on {}: {} (first for shape class {})", device_.info().name, choice, cls);
    }
    Gemm& gemm = variant(choice);
    gemm.set_profiling(profiling_);
    return gemm;
  }

  Gemm& variant(const std::string& name) {
    auto it = variants_.find(name);
    if (it == variants_.end()) it = variants_.emplace(name, make_(name)).first;
    return *it->second;
  }

  // The class's variant: the shared table's, else timed here (when two AutoGemms time one class
  // at once, the first to finish decides for both).
  std::string choice_for(const std::string& cls, const GemmShape& s, std::size_t outer, device::DType at,
                         device::DType bt, device::DType ct) {
    std::optional<std::string> stored;
    {
      std::lock_guard lock(registry_mutex());
      if (const auto it = choices_->find(cls); it != choices_->end()) stored = it->second;
    }
    // A stored choice this process's variant cannot run is timed again: a file written where oneDNN
    // had a bfloat16 matmul, read where it has none (another oneDNN, DNNL_MAX_CPU_ISA, or a CPU
    // that the device fingerprint did not tell apart), would fail the job at its first GEMM.
    if (stored && variant(*stored).supports(at, bt, ct)) return *stored;
    const std::string timed = tune(cls, s, outer, at, bt, ct);
    std::lock_guard lock(registry_mutex());
    const auto [it, inserted] = choices_->emplace(cls, timed);
    if (!inserted && stored && it->second == *stored) it->second = timed;  // replaces the stale choice
    if (inserted || it->second == timed) save();
    return it->second;
  }

  static std::mutex& registry_mutex() {
    static std::mutex m;
    return m;
  }
  static std::map<std::string, std::shared_ptr<std::map<std::string, std::string>>>& registry() {
    static std::map<std::string, std::shared_ptr<std::map<std::string, std::string>>> r;
    return r;
  }

  // Times the candidates that take these dtypes on `s` at gemm_timing_shape (capped at 2048 on CPU
  // devices, where a full shape can take seconds; 4096 elsewhere), on scratch buffers. A shape cut
  // much smaller favours small tiles that lose at the real size: on a GPU, where it leaves most of
  // the device idle, and on a 2-core EPYC too, where at 768 the OpenCL tiles beat oneDNN on
  // classes it wins at config C's 2048 rows. Batches: at most 8 matrices, or with an outer batch
  // (run_outer) both levels up to 64 matrices in all, the inner batch whole where it fits.
  // Candidates with a rate bound (make_timed_gemm) are built only where the bound reaches what the
  // others measured: building one costs more than timing it (PoCL compiles the OpenCL tiles for
  // seconds on a cold cache), and one that cannot win needs neither.
  std::string tune(const std::string& cls, GemmShape s, std::size_t outer_count, device::DType at, device::DType bt,
                   device::DType ct) {
    const auto takes = [&](const std::string& name) { return variant(name).supports(at, bt, ct); };
    std::vector<std::string> able;
    std::vector<std::pair<std::string, double>> bounded;  // name, GFLOP/s: not built yet
    for (const std::string& name : candidates_) {
      if (const double bound = bound_of(name); bound > 0) {
        bounded.emplace_back(name, bound);
      } else if (takes(name)) {
        able.push_back(name);
      }
    }
    if (able.empty()) {  // nothing to hold the bounds against: every candidate is timed
      for (const auto& [name, bound] : bounded) {
        if (takes(name)) able.push_back(name);
      }
      bounded.clear();
    }
    // make_gemm's candidate lists always hold a packed GEMM, which takes every dtype; a
    // make_timed_gemm caller runs only dtypes its candidates take.
    if (able.empty()) throw std::logic_error("auto GEMM: no candidate takes " + cls);
    if (able.size() == 1 && bounded.empty()) return able.front();
    const bool cpu = device_.info().kind == device::DeviceKind::kCpu;
    s = gemm_timing_shape(s, cpu ? 2048 : 4096);
    const bool two_levels = outer_count > 1;
    s.batch = std::min<std::size_t>(s.batch, two_levels ? 64 : 8);
    const std::size_t outer = two_levels ? std::clamp<std::size_t>(64 / s.batch, 1, outer_count) : 1;
    const double call_flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) *
                              static_cast<double>(std::max<std::size_t>(1, s.batch) * outer);
    // A cheap estimate of the timing's length at a modest rate (20 GFLOP/s on a CPU device, 2
    // TFLOP/s elsewhere; building the candidates' programs comes on top): a timing of seconds says
    // so at info before it starts, shorter ones at debug.
    const double seconds = call_flops * (2 * kRounds + 1) * static_cast<double>(able.size()) / (cpu ? 20e9 : 2e12);
    spdlog::log(seconds >= 1.0 ? spdlog::level::info : spdlog::level::debug,
                "GEMM on {}: timing {} candidates for shape class {} (about {:.1f} s at the capped shape {}x{}x{} x{}{})",
                device_.info().name, able.size(), cls, seconds, s.m, s.n, s.k, std::max<std::size_t>(1, s.batch),
                two_levels ? fmt::format(" x{}", outer) : std::string());
    const std::size_t a_rows = s.a == Transpose::kNo ? s.m : s.k, a_cols = s.a == Transpose::kNo ? s.k : s.m;
    const std::size_t b_rows = s.b == Transpose::kNo ? s.k : s.n, b_cols = s.b == Transpose::kNo ? s.n : s.k;
    const std::size_t matrices = s.batch * outer;  // contiguous: the outer stride is a whole inner batch
    device::TypedBuffer a(device_.context(), at, std::max<std::size_t>(1, matrices * a_rows * a_cols), "tune.a");
    device::TypedBuffer b(device_.context(), bt, std::max<std::size_t>(1, matrices * b_rows * b_cols), "tune.b");
    device::TypedBuffer c(device_.context(), ct, std::max<std::size_t>(1, matrices * s.m * s.n), "tune.c");
    // Uninitialised memory can hold denormals or NaNs, which slow some implementations by an order
    // of magnitude and made the choice change from run to run; zeros time every one fairly.
    for (const device::TypedBuffer* x : {&a, &b, &c}) device_.queue().zero(x->get(), x->bytes());
    const GemmOperand ao{a.get(), 0, a_cols, a_rows * a_cols, at}, bo{b.get(), 0, b_cols, b_rows * b_cols, bt},
        co{c.get(), 0, s.n, s.m * s.n, ct};
    const GemmOuterBatch ob{outer, s.batch * ao.batch_stride, s.batch * bo.batch_stride, s.batch * co.batch_stride};
    const auto run = [&](const std::string& name) { variant(name).run_outer(ob, s, 1.0f, ao, bo, 0.0f, co); };

    const auto fastest_gflops_of = [&](const std::vector<double>& best_ms) {
      return call_flops / (*std::min_element(best_ms.begin(), best_ms.end()) * 1e-3) * 1e-9;
    };
    // One unbounded candidate has no rival among its group: its timing only has to show that it
    // beats every bound, which further rounds (40 of them at sub-millisecond times) would only
    // confirm.
    double highest_bound = 0;
    for (const auto& [name, bound] : bounded) highest_bound = std::max(highest_bound, bound);
    const auto beats_every_bound = [&](const std::vector<double>& best_ms) {
      return fastest_gflops_of(best_ms) > highest_bound;
    };
    // With candidates still unbuilt, the rounds go on for at least kPatienceMs of wall time unless
    // the bounds are beaten sooner: a busy spell of the host (the step-0 checkpoint written in the
    // background, about 170 ms of a core at the default run's start) slowed every one of five
    // short rounds on a 2-core EPYC, and the tiles were then built for 3.2 s to lose by 2x.
    const double patience_ms = bounded.empty() ? 0.0 : kPatienceMs;
    std::vector<double> best_of = time_candidates(
        able, run, able.size() == 1 && !bounded.empty() ? beats_every_bound : RoundsEnough{}, patience_ms);
    if (!bounded.empty()) {
      const double fastest_gflops = fastest_gflops_of(best_of);
      std::vector<std::string> left_out;
      for (const auto& [name, bound] : bounded) {
        if (bound < fastest_gflops) {
          left_out.push_back(fmt::format("{} (at most {:.0f} GFLOP/s)", name, bound));
        } else if (takes(name)) {
          able.push_back(name);
        }
      }
      if (!left_out.empty()) {
        spdlog::debug("GEMM shape class {} on {}: not built, as {:.0f} GFLOP/s were measured: {}", cls,
                      device_.info().name, fastest_gflops, fmt::join(left_out, ", "));
      }
      // The survivors timed together with the others, rounds interleaved as always.
      if (able.size() > best_of.size()) best_of = time_candidates(able, run);
    }
    std::string best, report;
    double best_ms = 0;
    for (std::size_t i = 0; i < able.size(); ++i) {
      report += fmt::format(" {} {:.2f} ms", able[i], best_of[i]);
      if (best.empty() || best_of[i] < best_ms) {
        best = able[i];
        best_ms = best_of[i];
      }
    }
    spdlog::debug("GEMM shape class {} on {}: {} (timed:{})", cls, device_.info().name, best, report);
    return best;
  }

  // Each candidate's best time in ms: each run once to build or load its kernels, then rounds
  // that time every candidate in turn: a busy spell of the host (a background checkpoint write,
  // another process) then slows one round of all of them, not every repetition of one, which made
  // whole classes pick a GEMM three times slower than the best. `enough` (optional) ends the
  // rounds early once the best times so far settle what the caller asks.
  using RoundsEnough = std::function<bool(const std::vector<double>& best_ms)>;
  std::vector<double> time_candidates(const std::vector<std::string>& names,
                                      const std::function<void(const std::string&)>& run,
                                      const RoundsEnough& enough = {}, double patience_ms = 0) {
    for (const std::string& name : names) run(name);
    device_.queue().finish();
    std::vector<double> best_of(names.size(), 1e30);
    double round_ms = 0;  // the last round's timed milliseconds, all candidates
    // A wake-up of sleeping threads is lost in a run this long, which then goes untimed no more.
    constexpr double kWakeUpNegligibleMs = 20;
    const auto start = std::chrono::steady_clock::now();
    const auto patient = [&](int round) {
      return round < kMaxRounds &&
             std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() < patience_ms;
    };
    for (int round = 0; round < rounds_for(round_ms, round) || patient(round); ++round) {
      // Rounds 10 ms apart: a burst of another process (tens of ms) cannot cover all of them. BLIS
      // loses most to one, as its threads wait for each other at every panel.
      if (round > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      round_ms = 0;
      for (std::size_t i = 0; i < names.size(); ++i) {
        // Once untimed first: threads that slept through the pause (oneDNN's OpenMP threads wait
        // passively) would otherwise put their wake-up into a sub-millisecond timing, though in a
        // step GEMMs run back to back. On a 2-core EPYC that made C's classes pick the OpenCL
        // tiles over oneDNN in about half of the fresh runs, steps 565-717 ms by the draw.
        if (best_of[i] < kWakeUpNegligibleMs || round == 0) {
          run(names[i]);
          device_.queue().finish();
        }
        const auto t0 = std::chrono::steady_clock::now();
        run(names[i]);
        device_.queue().finish();
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        best_of[i] = std::min(best_of[i], ms);
        round_ms += ms;
      }
      if (enough && enough(best_of)) break;
    }
    return best_of;
  }

  // A candidate's rate bound in GFLOP/s (make_timed_gemm), 0 for none.
  double bound_of(const std::string& name) const { return bound_ ? bound_(name) : 0.0; }

  // Timing rounds: at least kRounds; short ones (sub-millisecond candidates, whose best of 5 is
  // at the mercy of one scheduler hiccup) go on until about 50 ms were timed, at most kMaxRounds.
  static int rounds_for(double round_ms, int done) {
    if (done < kRounds) return kRounds;
    constexpr double kTimedMs = 50;
    return round_ms * done >= kTimedMs ? done : kMaxRounds;
  }

  // Writes the shared table (registry_mutex held).
  void save() {
    if (choices_file_.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(choices_file_.parent_path(), ec);
    std::string text = fmt::format("candidates {}\n", candidate_list());
    for (const auto& [k, v] : *choices_) text += fmt::format("{} {}\n", k, v);
    try {
      write_file_atomically(choices_file_, text);  // a lost race between processes only re-times later
    } catch (const DataError& e) {  // a read-only or full disk must never stop training
      spdlog::debug("GEMM choices not saved: {}", e.what());
    }
  }

  static constexpr int kRounds = 5;
  static constexpr int kMaxRounds = 40;
  // Wall time that the unbounded candidates' rounds last at least while bounded ones wait (tune()).
  static constexpr double kPatienceMs = 400;

  std::string candidate_list() const { return fmt::format("{}", fmt::join(candidates_, ",")); }

  device::Device& device_;
  device::ProgramCache& cache_;
  std::vector<std::string> candidates_;
  GemmFactory make_;
  GemmRateBound bound_;
  std::shared_ptr<std::map<std::string, std::string>> choices_;  // class -> variant, shared (registry())
  std::map<std::string, std::unique_ptr<Gemm>> variants_;
  std::filesystem::path choices_file_;
  bool profiling_ = false;
};

}  // namespace

std::unique_ptr<Gemm> make_timed_gemm(device::Device& device, device::ProgramCache& cache,
                                      std::vector<std::string> candidates, GemmFactory make,
                                      const std::string& file_stem, GemmRateBound bound) {
  if (candidates.empty()) throw std::logic_error("make_timed_gemm: no candidates");
  return std::make_unique<AutoGemm>(device, cache, std::move(candidates), std::move(make), file_stem,
                                    std::move(bound));
}

std::unique_ptr<Gemm> make_float32_accumulating_gemm(device::Device& device, device::ProgramCache& cache) {
  if (device.info().kind != device::DeviceKind::kCpu) {
    // The direct GEMM's candidates are named by their tiles: a new `pax-ocl tune` result changes
    // the candidate list, so the stored choices are timed again.
    std::vector<std::string> gpu{"gpu-64x64"};
    for (const DirectTile& t : direct_auto_tiles(device.info())) gpu.push_back(std::string(kDirectPrefix) + t.name());
    gpu.push_back("clblast");
    if (onednn_gpu_refusal(device).empty()) gpu.push_back("onednn");  // Intel GPUs
    return make_timed_gemm(device, cache, gpu, variant_factory(device, cache), kGemmChoicesStem);
  }
  std::vector<std::string> cpu{"cpu-8x48", "cpu-12x32"};
  if (host_gemm_available(device)) {
    cpu.insert(cpu.begin(), "onednn");
    if (const std::string refusal = blis_auto_refusal(); refusal.empty()) {
      cpu.insert(cpu.begin() + 1, "blis");
    } else if (announce_once("blis left out of auto")) {
      spdlog::info("BLIS left out of --gemm=auto: {} (--gemm=blis still runs it)", refusal);
    }
  }
  return make_timed_gemm(device, cache, cpu, variant_factory(device, cache), kGemmChoicesStem,
                         opencl_tile_bound(device));
}

std::string gemm_policy_from(const std::optional<std::string>& flag) {
  std::string policy = "auto";
  if (flag) {
    policy = *flag;
  } else if (const char* env = std::getenv(kGemmEnvVar); env != nullptr && *env != '\0') {
    policy = env;
  }
  if (policy == "auto") return policy;
  for (const std::string& n : variant_names()) {
    if (n == policy) return policy;
  }
  std::string valid = "auto";
  for (const std::string& n : variant_names()) valid += ", " + n;
  throw ConfigError(fmt::format("GEMM '{}' is unknown; use one of: {}", policy, valid));
}

MatmulPrecision matmul_precision_from_name(const std::string& name) {
  if (name == "float32") return MatmulPrecision::kFloat32;
  if (name == "tf32") return MatmulPrecision::kTf32;
  throw ConfigError(fmt::format("MATMUL_PRECISION={}: use float32 or tf32", name));
}

std::unique_ptr<Gemm> make_gemm(device::Device& device, device::ProgramCache& cache, const std::string& policy,
                                MatmulPrecision precision) {
  const std::string name = policy == "auto" ? policy : gemm_policy_from(policy);
  const bool may_use_tensor_cores = name == "auto" || name == "tensor-core";
  if (precision == MatmulPrecision::kTf32) {
    const bool tf32 = may_use_tensor_cores && probe_tensor_cores(device.info(), cache).tf32;  // builds nothing off NVIDIA
    if (!tf32) {
      spdlog::info("MATMUL_PRECISION=tf32: {} runs its float32 GEMMs in float32 ({})", device.info().name,
                   may_use_tensor_cores ? "no TF32 tensor cores: " + probe_tensor_cores(device.info(), cache).reason
                                        : "GEMM '" + name + "' has no TF32 path");
    }
  }
  if (name != "auto") return make_variant(device, cache, name, precision);
  const TensorCores& tc = probe_tensor_cores(device.info(), cache);
  if (tc.bf16 || tc.f16 || (precision == MatmulPrecision::kTf32 && tc.tf32)) {
    return make_variant(device, cache, "tensor-core", precision);
  }
  return make_float32_accumulating_gemm(device, cache);
}

GemmShape gemm_timing_shape(GemmShape s, std::size_t cap) {
  s.m = std::min(s.m, cap);
  s.n = std::min(s.n, cap);
  s.k = std::min(s.k, 4 * cap);
  const auto macs = [&s] { return static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k); };
  const double budget = static_cast<double>(cap) * static_cast<double>(cap) * static_cast<double>(cap);
  while (macs() > budget && std::max(s.m, s.n) > 1) {  // ends by m = n = cap / 2 for any cap >= 2
    std::size_t& larger = s.m >= s.n ? s.m : s.n;
    larger = (larger + 1) / 2;
  }
  return s;
}

std::string gemm_shape_class(const GemmShape& s) {
  return fmt::format("m{}.n{}.k{}.{}", bucket(s.m), bucket(s.n), bucket(s.k), s.batch > 1 ? "batched" : "single");
}

}  // namespace paxocl::kernels
