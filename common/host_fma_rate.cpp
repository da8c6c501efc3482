#include "common/host_fma_rate.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "common/host_isa.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PAXOCL_HAVE_FMA_PROBE 1
#endif

namespace paxocl {
namespace {

// 12 chains: an FMA's 4-cycle latency times 2 FMA ports needs 8 in flight, and more hide the
// loop's own instructions. 40,000 iterations x 12 vector FMAs: about 0.2-0.5 ms at 2-3 GHz.
constexpr long kIterations = 40000;
constexpr int kChains = 12;

#ifdef PAXOCL_HAVE_FMA_PROBE
// Each returns a sum of its chains (so none is dead code); the values stay finite
// (x -> 0.9999x + 1e-4).
#define PAXOCL_FMA_CHAINS(VEC, SET1, FMA, ADD, LANE0)                                                           \
  VEC c0 = SET1(1.0f), c1 = SET1(1.1f), c2 = SET1(1.2f), c3 = SET1(1.3f), c4 = SET1(1.4f), c5 = SET1(1.5f);     \
  VEC c6 = SET1(1.6f), c7 = SET1(1.7f), c8 = SET1(1.8f), c9 = SET1(1.9f), c10 = SET1(2.0f), c11 = SET1(2.1f);   \
  const VEC m = SET1(0.9999f), a = SET1(1e-4f);                                                                 \
  for (long i = 0; i < kIterations; ++i) {                                                                      \
    c0 = FMA(c0, m, a), c1 = FMA(c1, m, a), c2 = FMA(c2, m, a), c3 = FMA(c3, m, a), c4 = FMA(c4, m, a);         \
    c5 = FMA(c5, m, a), c6 = FMA(c6, m, a), c7 = FMA(c7, m, a), c8 = FMA(c8, m, a), c9 = FMA(c9, m, a);         \
    c10 = FMA(c10, m, a), c11 = FMA(c11, m, a);                                                                 \
  }                                                                                                             \
  const VEC low = ADD(ADD(ADD(c0, c1), ADD(c2, c3)), ADD(c4, c5));                                             \
  const VEC high = ADD(ADD(ADD(c6, c7), ADD(c8, c9)), ADD(c10, c11));                                           \
  return LANE0(ADD(low, high))

[[gnu::target("avx512f")]] inline float first_lane(__m512 v) {
  float lanes[16];  // stored: GCC 12's cast and reduce intrinsics trip -Wuninitialized in its own header
  _mm512_storeu_ps(lanes, v);
  return lanes[0];
}
[[gnu::target("avx512f"), gnu::noinline]] float fma_chains_avx512() {
  PAXOCL_FMA_CHAINS(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, first_lane);
}
[[gnu::target("avx2,fma"), gnu::noinline]] float fma_chains_avx2() {
  PAXOCL_FMA_CHAINS(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, _mm256_cvtss_f32);
}
#undef PAXOCL_FMA_CHAINS
#endif

}  // namespace

double measure_host_fma_gflops(unsigned threads) {
#ifdef PAXOCL_HAVE_FMA_PROBE
  const HostIsa& isa = host_isa();
  if (!isa.avx512 && !isa.avx2_fma) return 0;
  const int lanes = isa.avx512 ? 16 : 8;
  float (*const chains)() = isa.avx512 ? fma_chains_avx512 : fma_chains_avx2;
  threads = std::max(1u, threads);
  double best_seconds = 1e30;
  for (int run = 0; run < 5; ++run) {
    if (run > 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    // Started together (each spins until all have arrived), timed each on its own; a run lasts
    // as long as its slowest thread, so threads that did not overlap cannot inflate the rate.
    std::atomic<unsigned> arrived{0};
    std::vector<double> seconds(threads);
    std::vector<std::thread> pool;
    std::atomic<float> sink{0};
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        arrived.fetch_add(1);
        while (arrived.load() < threads) {
        }
        const auto start = std::chrono::steady_clock::now();
        sink.store(chains());
        seconds[t] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      });
    }
    for (std::thread& t : pool) t.join();
    best_seconds = std::min(best_seconds, *std::max_element(seconds.begin(), seconds.end()));
  }
  const double flops = 2.0 * lanes * kChains * static_cast<double>(kIterations) * threads;
  return flops / best_seconds * 1e-9;
#else
  (void)threads;
  return 0;
#endif
}

}  // namespace paxocl
