#include "kernels_cl/host_flash_attention.h"

#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/float16.h"
#include "common/float16_arrays.h"
#include "common/host_isa.h"

// 64-byte vectors in internal, always-inlined helpers: GCC notes that their ABI differs between
// instruction sets, which matters only across calls that never happen here.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace paxocl::kernels {

namespace {

// ---- 16-float vectors (GCC vector extensions) ----
// The task functions below are compiled three times (AVX-512, AVX2 + FMA, and x86-64's baseline;
// widest_host_vector_unit() picks one by CPUID), so one binary runs 16 lanes in a zmm register, two
// ymm or four xmm, on whatever CPU it finds. Explicit variants rather than target_clones, which
// splits "avx2,fma" into two clones and so ran AVX2 without FMA.

typedef float Floats __attribute__((vector_size(64)));
typedef std::int32_t Ints __attribute__((vector_size(64)));
constexpr std::size_t kLanes = 16;

#define PAXOCL_INLINE [[gnu::always_inline]] inline

PAXOCL_INLINE Floats splat(float v) { return Floats{} + v; }
// n < kLanes floats from p, the rest `fill`.
PAXOCL_INLINE Floats load(const float* p, std::size_t n = kLanes, float fill = 0.0f) {
  Floats v = splat(fill);
  std::memcpy(&v, p, n * sizeof(float));
  return v;
}
PAXOCL_INLINE void store(float* p, Floats v, std::size_t n = kLanes) { std::memcpy(p, &v, n * sizeof(float)); }

// exp(x) to about 2 ulp (Cephes' expf: x = n ln2 + r, |r| <= ln2/2, a degree-7 polynomial in r,
// times 2^n from the exponent bits); 0 below -87.3 (where float32's exp underflows).
PAXOCL_INLINE Floats exp_floats(Floats x) {
  const Floats xc = x < splat(-87.3f) ? splat(-87.3f) : (x > splat(88.3f) ? splat(88.3f) : x);
  const Floats magic = splat(12582912.0f);  // 1.5 * 2^23: adding it rounds to an integer
  const Floats n = (xc * 1.44269504088896341f + magic) - magic;
  const Floats r = (xc - n * 0.693359375f) + n * 2.12194440e-4f;
  Floats y = splat(1.9875691500e-4f);
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * (r * r) + r + 1.0f;
  const Ints bits = (__builtin_convertvector(n, Ints) + 127) << 23;
  y = y * (Floats)bits;  // a vector cast keeps the bits
  return x < splat(-87.3f) ? splat(0.0f) : y;
}

// Lanes folded in one fixed order (so a row's result never depends on how it was reached).
PAXOCL_INLINE float lanes_max(Floats v) {
  float m = v[0];
  for (std::size_t i = 1; i < kLanes; ++i) m = std::max(m, v[i]);
  return m;
}
PAXOCL_INLINE float lanes_sum(Floats v) {
  for (std::size_t half = kLanes / 2; half > 0; half /= 2)
    for (std::size_t i = 0; i < half; ++i) v[i] += v[i + half];
  return v[0];
}

// Visits x[0 .. n) in vectors: f(vector, count) for each, count < kLanes only for the last.
template <typename F>
PAXOCL_INLINE void for_vectors(std::size_t n, F&& f) {
  std::size_t u = 0;
  for (; u + kLanes <= n; u += kLanes) f(u, kLanes);
  if (u < n) f(u, n - u);
}

// A forward row of `live` causal scores in place -> its probabilities (zero past `live` up to
// `n`); returns the row's logsumexp of scale * scores.
PAXOCL_INLINE float softmax_row(float* row, std::size_t live, std::size_t n, float scale) {
  Floats mv = splat(-INFINITY);
  for_vectors(live, [&](std::size_t u, std::size_t c) {
    const Floats x = load(row + u, c, -INFINITY);
    mv = x > mv ? x : mv;
  });
  const float shift = scale * lanes_max(mv);  // scale > 0: max(scale s) = scale max(s)
  Floats sv = splat(0.0f);
  for_vectors(live, [&](std::size_t u, std::size_t c) {
    const Floats p = exp_floats(load(row + u, c) * scale - shift);
    store(row + u, p, c);
    sv += c == kLanes ? p : load(row + u, c);  // the tail's padding lanes stay 0
  });
  const float sum = lanes_sum(sv), inv = 1.0f / sum;
  for_vectors(live, [&](std::size_t u, std::size_t c) { store(row + u, load(row + u, c) * inv, c); });
  std::fill(row + live, row + n, 0.0f);
  return shift + std::log(sum);
}

// Backward: scores -> probabilities exp(scale s - lse) over `live` entries, zero to `n`.
PAXOCL_INLINE void probs_row(float* row, std::size_t live, std::size_t n, float scale, float lse) {
  for_vectors(live, [&](std::size_t u, std::size_t c) { store(row + u, exp_floats(load(row + u, c) * scale - lse), c); });
  std::fill(row + live, row + n, 0.0f);
}

// dP -> dS = scale P (dP - delta) over `live` entries, zero to `n`.
PAXOCL_INLINE void dscores_row(float* dp, const float* p, std::size_t live, std::size_t n, float scale, float delta) {
  for_vectors(live, [&](std::size_t u, std::size_t c) {
    store(dp + u, load(p + u, c) * (load(dp + u, c) - delta) * scale, c);
  });
  std::fill(dp + live, dp + n, 0.0f);
}

// ---- operands ----
// Inlined into the task functions, so each compiled variant converts 16-bit rows in its own vectors.

// `rows` rows of `cols` floats, `ld` apart.
struct FloatRows {
  const float* data;
  std::size_t ld;
};

template <typename Convert>
PAXOCL_INLINE void widen(const std::uint16_t* src, std::size_t rows, std::size_t stride, std::size_t cols, float* dst,
                         Convert convert) {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < cols; ++j) dst[r * cols + j] = convert(src[r * stride + j]);
}

// Rows first_row .. first_row+rows-1, columns col .. col+cols-1 of a row-major (., stride) array
// of `dt`: float32 in place, 16-bit widened into `scratch` (rows, cols).
PAXOCL_INLINE FloatRows float_rows(const void* base, device::DType dt, std::size_t first_row, std::size_t rows,
                                   std::size_t stride, std::size_t col, std::size_t cols, std::vector<float>& scratch) {
  const std::size_t at = first_row * stride + col;
  if (dt == device::DType::kF32) return {static_cast<const float*>(base) + at, stride};
  scratch.resize(rows * cols);
  const std::uint16_t* src = static_cast<const std::uint16_t*>(base) + at;
  if (dt == device::DType::kBF16) {
    widen(src, rows, stride, cols, scratch.data(), [](std::uint16_t h) { return bf16_to_float(h); });
  } else {
    for (std::size_t r = 0; r < rows; ++r) halves_to_floats(src + r * stride, cols, scratch.data() + r * cols);
  }
  return {scratch.data(), cols};
}

// (rows, cols) floats -> rows of `dt` at first_row, column col of a row-major (., stride) array.
PAXOCL_INLINE void store_rows(const float* src, std::size_t src_ld, std::size_t rows, std::size_t cols, void* base,
                              device::DType dt, std::size_t first_row, std::size_t stride, std::size_t col) {
  for (std::size_t r = 0; r < rows; ++r) {
    const float* s = src + r * src_ld;
    const std::size_t at = (first_row + r) * stride + col;
    if (dt == device::DType::kF32) {
      std::memcpy(static_cast<float*>(base) + at, s, cols * sizeof(float));
    } else if (dt == device::DType::kBF16) {
      std::uint16_t* d = static_cast<std::uint16_t*>(base) + at;
      for (std::size_t j = 0; j < cols; ++j) d[j] = float_to_bf16(s[j]);
    } else {
      floats_to_halves(s, cols, static_cast<std::uint16_t*>(base) + at);
    }
  }
}

// C (m, n) = alpha op(A) op(B) + beta C, row-major, on this thread (oneDNN runs one thread inside
// an OpenMP parallel region).
void sgemm(bool at, bool bt, std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
           const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc) {
  const auto d = [](std::size_t v) { return static_cast<dnnl_dim_t>(v); };
  const dnnl_status_t status = dnnl_sgemm(at ? 'T' : 'N', bt ? 'T' : 'N', d(m), d(n), d(k), 1.0f, a, d(lda), b,
                                          d(ldb), beta, c, d(ldc));
  if (status != dnnl_success) {
    throw std::runtime_error("host flash attention: oneDNN's sgemm refused a " + std::to_string(m) + "x" +
                             std::to_string(n) + "x" + std::to_string(k) + " product (status " +
                             std::to_string(static_cast<int>(status)) + ")");
  }
}

// Runs task(i, workspace) for i < count on `threads` OpenMP threads (dynamic: causal tasks differ
// in size; each task's result is its own, so the schedule never changes a bit). The first
// exception stops the remaining tasks and is rethrown here.
template <typename Workspace, typename Task>
void run_tasks(std::size_t count, unsigned threads, Task&& task) {
  std::exception_ptr failure;
  std::mutex failure_mutex;
  const int n = static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(threads, count)));
#pragma omp parallel num_threads(n)
  {
    // oneDNN's GEMMs inside a task run on this thread alone: a team of one is not "in parallel"
    // to OpenMP, and oneDNN would start a team of its own per call.
    omp_set_num_threads(1);
    Workspace workspace;
#pragma omp for schedule(dynamic, 1)
    for (std::size_t i = 0; i < count; ++i) {
      {
        std::lock_guard lock(failure_mutex);
        if (failure) continue;
      }
      try {
        task(i, workspace);
      } catch (...) {
        std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    }
  }
  if (failure) std::rethrow_exception(failure);
}

struct ForwardWorkspace {
  std::vector<float> q, k, v, scores, out;
};

// Task (b, h, blocks first .. first+count-1): each block's queries q0 .. q0+Q-1 of sequence b, head
// h (positions p0 + q0 + i), against keys 0 .. L-1, L = p0 + q0 + Q. Keys and values are widened
// once, for the last block: the others' are a prefix of its.
PAXOCL_INLINE void forward_body(const HostFlashForward& a, std::size_t b, std::size_t h, std::size_t first,
                               std::size_t count, ForwardWorkspace& w) {
  const std::size_t hs = a.heads.head_size, c = h / a.heads.group(), Qb = a.query_block;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const std::size_t kv_row = b * a.kv_rows_per_sequence, keys = a.p0 + std::min(a.queries, (first + count) * Qb);
  const FloatRows k = float_rows(a.kv, a.act, kv_row, keys, a.kv_stride, a.k_col + c * hs, hs, w.k);
  const FloatRows v = float_rows(a.kv, a.act, kv_row, keys, a.kv_stride, a.v_col + c * hs, hs, w.v);
  float* lse = a.lse + (b * a.heads.heads + h) * a.stats_stride + a.p0;
  for (std::size_t block = first + count; block-- > first;) {
    const std::size_t q0 = block * Qb, Q = std::min(Qb, a.queries - q0), L = a.p0 + q0 + Q;
    const std::size_t q_row = b * a.queries + q0;
    const FloatRows q = float_rows(a.q, a.act, q_row, Q, a.q_stride, h * hs, hs, w.q);
    w.scores.resize(Q * L);
    sgemm(false, true, Q, L, hs, q.data, q.ld, k.data, k.ld, 0.0f, w.scores.data(), L);  // S (Q, L)
    for (std::size_t i = 0; i < Q; ++i)
      lse[q0 + i] = softmax_row(w.scores.data() + i * L, a.p0 + q0 + i + 1, L, scale);
    // out (Q, hs) = P V: straight into float32 rows, through a float32 block otherwise.
    if (a.act == device::DType::kF32) {
      float* out = static_cast<float*>(a.out) + q_row * a.out_stride + h * hs;
      sgemm(false, false, Q, hs, L, w.scores.data(), L, v.data, v.ld, 0.0f, out, a.out_stride);
      continue;
    }
    w.out.resize(Q * hs);
    sgemm(false, false, Q, hs, L, w.scores.data(), L, v.data, v.ld, 0.0f, w.out.data(), hs);
    store_rows(w.out.data(), hs, Q, hs, a.out, a.act, q_row, a.out_stride, h * hs);
  }
}

struct BackwardWorkspace {
  std::vector<float> k, v, q, dout, out, p, dp, dq, dk, dv, delta;
};

// Task (b, c): every query head of kv head c's group over sequence b; dk, dv summed in float32.
PAXOCL_INLINE void backward_body(const HostFlashBackward& a, std::size_t b, std::size_t c, BackwardWorkspace& w) {
  const std::size_t T = a.T, hs = a.heads.head_size, g = a.heads.group(), H = a.heads.heads, D = H * hs;
  const std::size_t Qb = a.query_block, row0 = b * T;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const FloatRows k = float_rows(a.qkv, a.act, row0, T, a.width, a.k_col + c * hs, hs, w.k);
  const FloatRows v = float_rows(a.qkv, a.act, row0, T, a.width, a.v_col + c * hs, hs, w.v);
  w.dk.assign(T * hs, 0.0f);
  w.dv.assign(T * hs, 0.0f);
  w.dq.resize(Qb * hs);
  w.delta.resize(Qb);
  for (std::size_t j = 0; j < g; ++j) {
    const std::size_t h = c * g + j;
    const float* lse = a.lse + (b * H + h) * T;
    for (std::size_t q0 = 0; q0 < T; q0 += Qb) {
      const std::size_t Q = std::min(Qb, T - q0), L = q0 + Q;
      const FloatRows q = float_rows(a.qkv, a.act, row0 + q0, Q, a.width, h * hs, hs, w.q);
      const FloatRows dout = float_rows(a.dout, a.act, row0 + q0, Q, D, h * hs, hs, w.dout);
      const FloatRows out = float_rows(a.out, a.act, row0 + q0, Q, D, h * hs, hs, w.out);
      for (std::size_t i = 0; i < Q; ++i) {  // delta = rowsum(dO o), the forward's rounded output
        float sum = 0.0f;
        for (std::size_t d = 0; d < hs; ++d) sum += dout.data[i * dout.ld + d] * out.data[i * out.ld + d];
        w.delta[i] = sum;
      }
      w.p.resize(Q * L);
      w.dp.resize(Q * L);
      sgemm(false, true, Q, L, hs, q.data, q.ld, k.data, k.ld, 0.0f, w.p.data(), L);
      for (std::size_t i = 0; i < Q; ++i) probs_row(w.p.data() + i * L, q0 + i + 1, L, scale, lse[q0 + i]);
      sgemm(true, false, L, hs, Q, w.p.data(), L, dout.data, dout.ld, 1.0f, w.dv.data(), hs);   // dv += P^T dO
      sgemm(false, true, Q, L, hs, dout.data, dout.ld, v.data, v.ld, 0.0f, w.dp.data(), L);     // dP = dO v^T
      for (std::size_t i = 0; i < Q; ++i)
        dscores_row(w.dp.data() + i * L, w.p.data() + i * L, q0 + i + 1, L, scale, w.delta[i]);
      sgemm(false, false, Q, hs, L, w.dp.data(), L, k.data, k.ld, 0.0f, w.dq.data(), hs);       // dq = dS k
      store_rows(w.dq.data(), hs, Q, hs, a.dqkv, a.act, row0 + q0, a.width, h * hs);
      sgemm(true, false, L, hs, Q, w.dp.data(), L, q.data, q.ld, 1.0f, w.dk.data(), hs);        // dk += dS^T q
    }
  }
  store_rows(w.dk.data(), hs, T, hs, a.dqkv, a.act, row0, a.width, a.k_col + c * hs);
  store_rows(w.dv.data(), hs, T, hs, a.dqkv, a.act, row0, a.width, a.v_col + c * hs);
}

// The variants (HostVectorUnit): each inlines the body for its instruction set.
[[gnu::target("avx512f,fma")]] void forward_avx512(const HostFlashForward& a, std::size_t b, std::size_t h,
                                                   std::size_t first, std::size_t count, ForwardWorkspace& w) {
  forward_body(a, b, h, first, count, w);
}
[[gnu::target("avx2,fma")]] void forward_avx2(const HostFlashForward& a, std::size_t b, std::size_t h,
                                              std::size_t first, std::size_t count, ForwardWorkspace& w) {
  forward_body(a, b, h, first, count, w);
}
void forward_baseline(const HostFlashForward& a, std::size_t b, std::size_t h, std::size_t first, std::size_t count,
                      ForwardWorkspace& w) {
  forward_body(a, b, h, first, count, w);
}
[[gnu::target("avx512f,fma")]] void backward_avx512(const HostFlashBackward& a, std::size_t b, std::size_t c,
                                                    BackwardWorkspace& w) {
  backward_body(a, b, c, w);
}
[[gnu::target("avx2,fma")]] void backward_avx2(const HostFlashBackward& a, std::size_t b, std::size_t c,
                                               BackwardWorkspace& w) {
  backward_body(a, b, c, w);
}
void backward_baseline(const HostFlashBackward& a, std::size_t b, std::size_t c, BackwardWorkspace& w) {
  backward_body(a, b, c, w);
}

void forward_task(HostVectorUnit unit, const HostFlashForward& a, std::size_t b, std::size_t h, std::size_t first,
                  std::size_t count, ForwardWorkspace& w) {
  switch (unit) {
    case HostVectorUnit::kAvx512: return forward_avx512(a, b, h, first, count, w);
    case HostVectorUnit::kAvx2: return forward_avx2(a, b, h, first, count, w);
    case HostVectorUnit::kBaseline: break;
  }
  forward_baseline(a, b, h, first, count, w);
}

void backward_task(HostVectorUnit unit, const HostFlashBackward& a, std::size_t b, std::size_t c,
                   BackwardWorkspace& w) {
  switch (unit) {
    case HostVectorUnit::kAvx512: return backward_avx512(a, b, c, w);
    case HostVectorUnit::kAvx2: return backward_avx2(a, b, c, w);
    case HostVectorUnit::kBaseline: break;
  }
  backward_baseline(a, b, c, w);
}

// The call's unit, checked: AVX-512 code on a CPU without it would die of SIGILL mid-step.
HostVectorUnit checked_unit(const std::optional<HostVectorUnit>& asked, std::size_t query_block) {
  if (query_block == 0) throw std::invalid_argument("host flash attention: a query block of 0 queries");
  const HostVectorUnit unit = asked.value_or(widest_host_vector_unit());
  if (!host_vector_unit_available(unit)) {
    throw std::invalid_argument(std::string("host flash attention: this CPU lacks ") + host_vector_unit_name(unit));
  }
  return unit;
}

}  // namespace

bool host_vector_unit_available(HostVectorUnit unit) {
  switch (unit) {
    case HostVectorUnit::kAvx512: return host_isa().avx512;
    case HostVectorUnit::kAvx2: return host_isa().avx2_fma;
    case HostVectorUnit::kBaseline: break;
  }
  return true;
}

HostVectorUnit widest_host_vector_unit() {
  static const HostVectorUnit unit = [] {
    for (const HostVectorUnit u : {HostVectorUnit::kAvx512, HostVectorUnit::kAvx2}) {
      if (host_vector_unit_available(u)) return u;
    }
    return HostVectorUnit::kBaseline;
  }();
  return unit;
}

const char* host_vector_unit_name(HostVectorUnit unit) {
  switch (unit) {
    case HostVectorUnit::kAvx512: return "AVX-512";
    case HostVectorUnit::kAvx2: return "AVX2 + FMA";
    case HostVectorUnit::kBaseline: break;
  }
  return "SSE2";
}

void host_flash_forward(const HostFlashForward& a, unsigned threads) {
  const HostVectorUnit unit = checked_unit(a.unit, a.query_block);
  const std::size_t Qb = a.query_block, blocks = (a.queries + Qb - 1) / Qb, H = a.heads.heads;
  // A task per (sequence, head) where those keep every thread busy (keys and values widened once
  // for all its blocks); else a task per block, longest first so the short ones fill in at the end.
  // Either way each block's results are the same bits.
  if (a.B * H >= 4 * std::max(1u, threads)) {
    run_tasks<ForwardWorkspace>(a.B * H, threads,
                                [&](std::size_t i, ForwardWorkspace& w) { forward_task(unit, a, i / H, i % H, 0, blocks, w); });
    return;
  }
  run_tasks<ForwardWorkspace>(a.B * H * blocks, threads, [&](std::size_t i, ForwardWorkspace& w) {
    const std::size_t block = blocks - 1 - i % blocks, h = (i / blocks) % H, b = i / (blocks * H);
    forward_task(unit, a, b, h, block, 1, w);
  });
}

void host_flash_backward(const HostFlashBackward& a, unsigned threads) {
  const HostVectorUnit unit = checked_unit(a.unit, a.query_block);
  const std::size_t kv = a.heads.kv_heads;
  run_tasks<BackwardWorkspace>(a.B * kv, threads,
                               [&](std::size_t i, BackwardWorkspace& w) { backward_task(unit, a, i / kv, i % kv, w); });
}

}  // namespace paxocl::kernels
