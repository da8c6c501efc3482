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
#include <utility>
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
// The code below is compiled three times (AVX-512, AVX2 + FMA, and x86-64's baseline;
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

// Rows from `first` on.
PAXOCL_INLINE FloatRows rows_from(FloatRows m, std::size_t first) { return {m.data + first * m.ld, m.ld}; }

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

// ---- the arithmetic outside the GEMMs, one copy per instruction set ----
// GCC contracts a * b + c into an FMA as it sees fit in each place a helper is inlined, so a row
// pass inlined into the fused and the split backward's tasks could round differently in each: the
// row passes and dot products are noinline functions per HostVectorUnit (PAXOCL_UNIT_VARIANTS),
// one copy each, which is what lets both backward forms give the same bits. The task bodies are
// compiled per unit too, for their 16-bit conversions (exact: no rounding to differ).

// Forward: rows i < Q of S (Q, L) -> probabilities in place over their live0 + i + 1 causal keys;
// lse[i] = the row's logsumexp of scale * S.
PAXOCL_INLINE void softmax_rows_body(float* s, std::size_t Q, std::size_t L, std::size_t live0, float scale,
                                     float* lse) {
  for (std::size_t i = 0; i < Q; ++i) lse[i] = softmax_row(s + i * L, live0 + i + 1, L, scale);
}

// Backward, keys k0 .. k0+N-1 against queries q0 .. q0+Q-1 (p, dp: the block's first column, rows
// ld apart): scores -> P = exp(scale s - lse), dP -> dS = scale P (dP - delta); zero past each
// row's causal keys.
struct KeyBlockRows {
  float* p;
  float* dp;
  std::size_t ld, Q, N, q0, k0;
  float scale;
  const float* lse;
  const float* delta;
};
PAXOCL_INLINE void key_block_rows_body(const KeyBlockRows& r) {
  for (std::size_t i = 0; i < r.Q; ++i) {
    const std::size_t live = std::min(r.N, r.q0 + i + 1 > r.k0 ? r.q0 + i + 1 - r.k0 : 0);
    probs_row(r.p + i * r.ld, live, r.N, r.scale, r.lse[i]);
    dscores_row(r.dp + i * r.ld, r.p + i * r.ld, live, r.N, r.scale, r.delta[i]);
  }
}

// delta[i] = rowsum(dO o) over Q rows of hs.
PAXOCL_INLINE void row_dots_body(const float* dout, std::size_t dout_ld, const float* out, std::size_t out_ld,
                                 std::size_t Q, std::size_t hs, float* delta) {
  for (std::size_t i = 0; i < Q; ++i) {
    float sum = 0.0f;
    for (std::size_t d = 0; d < hs; ++d) sum += dout[i * dout_ld + d] * out[i * out_ld + d];
    delta[i] = sum;
  }
}

// name(unit, args...) runs name_body compiled for `unit`: three noinline copies, each with its
// instruction set, so that a body's FMAs are the same wherever it is called from. PARAMS follow
// the unit, which ARGS may pass on.
#define PAXOCL_UNPAREN(...) __VA_ARGS__
#define PAXOCL_UNIT_VARIANT(name, suffix, PARAMS, ARGS) \
  void name##suffix([[maybe_unused]] HostVectorUnit unit, PAXOCL_UNPAREN PARAMS) { name##_body ARGS; }
#define PAXOCL_UNIT_VARIANTS(name, PARAMS, ARGS)                                               \
  [[gnu::target("avx512f,fma"), gnu::noinline]] PAXOCL_UNIT_VARIANT(name, _avx512, PARAMS, ARGS) \
  [[gnu::target("avx2,fma"), gnu::noinline]] PAXOCL_UNIT_VARIANT(name, _avx2, PARAMS, ARGS)      \
  [[gnu::noinline]] PAXOCL_UNIT_VARIANT(name, _baseline, PARAMS, ARGS)                           \
  template <typename... Args>                                                                  \
  void name(HostVectorUnit unit, Args&&... args) {                                             \
    switch (unit) {                                                                            \
      case HostVectorUnit::kAvx512: return name##_avx512(unit, std::forward<Args>(args)...);   \
      case HostVectorUnit::kAvx2: return name##_avx2(unit, std::forward<Args>(args)...);       \
      case HostVectorUnit::kBaseline: break;                                                   \
    }                                                                                          \
    name##_baseline(unit, std::forward<Args>(args)...);                                        \
  }

PAXOCL_UNIT_VARIANTS(softmax_rows, (float* s, std::size_t Q, std::size_t L, std::size_t live0, float scale, float* lse),
                     (s, Q, L, live0, scale, lse))
PAXOCL_UNIT_VARIANTS(key_block_rows, (const KeyBlockRows& r), (r))
PAXOCL_UNIT_VARIANTS(row_dots,
                     (const float* dout, std::size_t dout_ld, const float* out, std::size_t out_ld, std::size_t Q,
                      std::size_t hs, float* delta),
                     (dout, dout_ld, out, out_ld, Q, hs, delta))

// ---- forward ----

struct ForwardWorkspace {
  std::vector<float> q, k, v, scores, out;
};

// Task (b, h, blocks first .. first+count-1): each block's queries q0 .. q0+Q-1 of sequence b, head
// h (positions p0 + q0 + i), against keys 0 .. L-1, L = p0 + q0 + Q. Keys and values are widened
// once, for the last block: the others' are a prefix of its.
PAXOCL_INLINE void forward_task_body(HostVectorUnit unit, const HostFlashForward& a, std::size_t b, std::size_t h,
                                     std::size_t first, std::size_t count, ForwardWorkspace& w) {
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
    softmax_rows(unit, w.scores.data(), Q, L, a.p0 + q0, scale, lse + q0);
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

// The tasks, compiled per unit (their 16-bit conversions vectorised for it); the row passes they
// call are the noinline copies above.
PAXOCL_UNIT_VARIANTS(forward_task,
                     (const HostFlashForward& a, std::size_t b, std::size_t h, std::size_t first, std::size_t count,
                      ForwardWorkspace& w),
                     (unit, a, b, h, first, count, w))

// ---- backward ----

struct BackwardWorkspace {
  std::vector<float> k, v, q, dout, out, p, dp, dq, dk, dv, delta;
};

// The backward's operands for query block q0 .. q0+Q-1 of sequence b, query head h, whose causal
// keys are 0 .. L-1: q and dO rows, delta = rowsum(dO o) (the forward's rounded output), and
// w.p, w.dp sized (Q, L) for the block's scores.
struct QueryRows {
  std::size_t h, q0, Q, L, row;  // row: the block's first row of qkv
  FloatRows q, dout;
  const float* lse;
};

PAXOCL_INLINE QueryRows query_rows(HostVectorUnit unit, const HostFlashBackward& a, std::size_t b, std::size_t h,
                                   std::size_t q0, BackwardWorkspace& w) {
  const std::size_t hs = a.heads.head_size, D = a.heads.heads * hs, Q = std::min(a.query_block, a.T - q0);
  const std::size_t row = b * a.T + q0;
  const QueryRows r{h,
                    q0,
                    Q,
                    q0 + Q,
                    row,
                    float_rows(a.qkv, a.act, row, Q, a.width, h * hs, hs, w.q),
                    float_rows(a.dout, a.act, row, Q, D, h * hs, hs, w.dout),
                    a.lse + (b * a.heads.heads + h) * a.T + q0};
  const FloatRows out = float_rows(a.out, a.act, row, Q, D, h * hs, hs, w.out);
  w.delta.resize(Q);
  row_dots(unit, r.dout.data, r.dout.ld, out.data, out.ld, Q, hs, w.delta.data());
  w.p.resize(Q * r.L);
  w.dp.resize(Q * r.L);
  return r;
}

// Keys k0 .. k0+N-1 of the block (k, v: their rows, from key k0): P into w.p's columns k0..,
// dS into w.dp's. Both backward forms compute every key block by this call, so that their scores
// are the same bits.
PAXOCL_INLINE void key_block_scores(HostVectorUnit unit, const HostFlashBackward& a, const QueryRows& r, FloatRows k, FloatRows v,
                      std::size_t k0, std::size_t N, BackwardWorkspace& w) {
  const std::size_t hs = a.heads.head_size, L = r.L;
  float* p = w.p.data() + k0;
  float* dp = w.dp.data() + k0;
  sgemm(false, true, r.Q, N, hs, r.q.data, r.q.ld, k.data, k.ld, 0.0f, p, L);
  sgemm(false, true, r.Q, N, hs, r.dout.data, r.dout.ld, v.data, v.ld, 0.0f, dp, L);  // dP = dO v^T
  key_block_rows(unit, KeyBlockRows{p, dp, L, r.Q, N, r.q0, k0, 1.0f / std::sqrt(static_cast<float>(hs)), r.lse,
                                    w.delta.data()});
}

// dv (N, hs) += P^T dO and dk (N, hs) += dS^T q over the block's keys k0 .. k0+N-1.
PAXOCL_INLINE void key_block_gradients(const HostFlashBackward& a, const QueryRows& r, std::size_t k0, std::size_t N, float* dk,
                         float* dv, const BackwardWorkspace& w) {
  const std::size_t hs = a.heads.head_size;
  sgemm(true, false, N, hs, r.Q, w.p.data() + k0, r.L, r.dout.data, r.dout.ld, 1.0f, dv, hs);
  sgemm(true, false, N, hs, r.Q, w.dp.data() + k0, r.L, r.q.data, r.q.ld, 1.0f, dk, hs);
}

// dq (Q, hs) = dS k over the block's causal keys, stored into dqkv.
PAXOCL_INLINE void store_dq(const HostFlashBackward& a, const QueryRows& r, FloatRows k, BackwardWorkspace& w) {
  const std::size_t hs = a.heads.head_size;
  w.dq.resize(r.Q * hs);
  sgemm(false, false, r.Q, hs, r.L, w.dp.data(), r.L, k.data, k.ld, 0.0f, w.dq.data(), hs);
  store_rows(w.dq.data(), hs, r.Q, hs, a.dqkv, a.act, r.row, a.width, r.h * hs);
}

// Fused form, task (b, c): every query head of kv head c's group over sequence b, each query block
// once; dk, dv summed in float32 over (query head, query block) in that order.
PAXOCL_INLINE void backward_fused(HostVectorUnit unit, const HostFlashBackward& a, std::size_t b, std::size_t c,
                    BackwardWorkspace& w) {
  const std::size_t T = a.T, hs = a.heads.head_size, g = a.heads.group(), Kb = a.key_block, row0 = b * T;
  const FloatRows k = float_rows(a.qkv, a.act, row0, T, a.width, a.k_col + c * hs, hs, w.k);
  const FloatRows v = float_rows(a.qkv, a.act, row0, T, a.width, a.v_col + c * hs, hs, w.v);
  w.dk.assign(T * hs, 0.0f);
  w.dv.assign(T * hs, 0.0f);
  for (std::size_t j = 0; j < g; ++j) {
    for (std::size_t q0 = 0; q0 < T; q0 += a.query_block) {
      const QueryRows r = query_rows(unit, a, b, c * g + j, q0, w);
      for (std::size_t k0 = 0; k0 < r.L; k0 += Kb)
        key_block_scores(unit, a, r, rows_from(k, k0), rows_from(v, k0), k0, std::min(Kb, r.L - k0), w);
      store_dq(a, r, k, w);
      for (std::size_t k0 = 0; k0 < r.L; k0 += Kb)
        key_block_gradients(a, r, k0, std::min(Kb, r.L - k0), w.dk.data() + k0 * hs, w.dv.data() + k0 * hs, w);
    }
  }
  store_rows(w.dk.data(), hs, T, hs, a.dqkv, a.act, row0, a.width, a.k_col + c * hs);
  store_rows(w.dv.data(), hs, T, hs, a.dqkv, a.act, row0, a.width, a.v_col + c * hs);
}

// Split form, dq task (b, h, q0): one query block's dq, from the fused form's scores.
PAXOCL_INLINE void backward_query_block(HostVectorUnit unit, const HostFlashBackward& a, std::size_t b, std::size_t h,
                          std::size_t q0, BackwardWorkspace& w) {
  const std::size_t hs = a.heads.head_size, c = h / a.heads.group(), row0 = b * a.T;
  const QueryRows r = query_rows(unit, a, b, h, q0, w);
  const FloatRows k = float_rows(a.qkv, a.act, row0, r.L, a.width, a.k_col + c * hs, hs, w.k);
  const FloatRows v = float_rows(a.qkv, a.act, row0, r.L, a.width, a.v_col + c * hs, hs, w.v);
  for (std::size_t k0 = 0; k0 < r.L; k0 += a.key_block)
    key_block_scores(unit, a, r, rows_from(k, k0), rows_from(v, k0), k0, std::min(a.key_block, r.L - k0), w);
  store_dq(a, r, k, w);
}

// Split form, dk/dv task (b, c, k0): keys k0 .. k0+N-1 of kv head c over sequence b, summed over
// the (query head, query block) pairs that see them in the fused form's order: the same bits.
PAXOCL_INLINE void backward_key_block(HostVectorUnit unit, const HostFlashBackward& a, std::size_t b, std::size_t c,
                        std::size_t k0, BackwardWorkspace& w) {
  const std::size_t T = a.T, hs = a.heads.head_size, g = a.heads.group(), row0 = b * T;
  const std::size_t N = std::min(a.key_block, T - k0);
  const FloatRows k = float_rows(a.qkv, a.act, row0 + k0, N, a.width, a.k_col + c * hs, hs, w.k);
  const FloatRows v = float_rows(a.qkv, a.act, row0 + k0, N, a.width, a.v_col + c * hs, hs, w.v);
  w.dk.assign(N * hs, 0.0f);
  w.dv.assign(N * hs, 0.0f);
  for (std::size_t j = 0; j < g; ++j) {
    for (std::size_t q0 = k0 / a.query_block * a.query_block; q0 < T; q0 += a.query_block) {
      const QueryRows r = query_rows(unit, a, b, c * g + j, q0, w);
      const std::size_t seen = std::min(N, r.L - k0);  // the block's keys at or before the queries' last
      key_block_scores(unit, a, r, k, v, k0, seen, w);
      key_block_gradients(a, r, k0, seen, w.dk.data(), w.dv.data(), w);
    }
  }
  store_rows(w.dk.data(), hs, N, hs, a.dqkv, a.act, row0 + k0, a.width, a.k_col + c * hs);
  store_rows(w.dv.data(), hs, N, hs, a.dqkv, a.act, row0 + k0, a.width, a.v_col + c * hs);
}

// One backward task: the fused form's (b, c), or the split form's dq (b, h, q0) or dk/dv (b, c, k0).
struct BackwardTask {
  enum Kind { kFused, kQueryBlock, kKeyBlock } kind;
  std::size_t b, head, first;
};

PAXOCL_INLINE void backward_task_body(HostVectorUnit unit, const HostFlashBackward& a, const BackwardTask& t,
                                      BackwardWorkspace& w) {
  switch (t.kind) {
    case BackwardTask::kFused: return backward_fused(unit, a, t.b, t.head, w);
    case BackwardTask::kQueryBlock: return backward_query_block(unit, a, t.b, t.head, t.first, w);
    case BackwardTask::kKeyBlock: return backward_key_block(unit, a, t.b, t.head, t.first, w);
  }
}
PAXOCL_UNIT_VARIANTS(backward_task, (const HostFlashBackward& a, const BackwardTask& t, BackwardWorkspace& w),
                     (unit, a, t, w))

// The form's tasks, largest first: fused (b, c); split, the dk/dv tasks by key block (the first
// block's keys are seen by every query block) and then the dq tasks by query block, last first.
std::vector<BackwardTask> backward_tasks(const HostFlashBackward& a, HostFlashBackwardForm form) {
  const std::size_t B = a.B, H = a.heads.heads, kv = a.heads.kv_heads;
  std::vector<BackwardTask> tasks;
  if (form == HostFlashBackwardForm::kFused) {
    for (std::size_t i = 0; i < B * kv; ++i) tasks.push_back({BackwardTask::kFused, i / kv, i % kv, 0});
    return tasks;
  }
  for (std::size_t k0 = 0; k0 < a.T; k0 += a.key_block)
    for (std::size_t i = 0; i < B * kv; ++i) tasks.push_back({BackwardTask::kKeyBlock, i / kv, i % kv, k0});
  const std::size_t blocks = (a.T + a.query_block - 1) / a.query_block;
  for (std::size_t q = blocks; q-- > 0;)
    for (std::size_t i = 0; i < B * H; ++i) tasks.push_back({BackwardTask::kQueryBlock, i / H, i % H, q * a.query_block});
  return tasks;
}

// The call's unit, checked: AVX-512 code on a CPU without it would die of SIGILL mid-step.
HostVectorUnit checked_unit(const std::optional<HostVectorUnit>& asked, std::size_t query_block,
                            std::size_t key_block = 1) {
  if (query_block == 0) throw std::invalid_argument("host flash attention: a query block of 0 queries");
  if (key_block == 0) throw std::invalid_argument("host flash attention: a key block of 0 keys");
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

HostFlashBackwardForm host_flash_backward_form(std::size_t sequences_times_kv_heads, unsigned threads) {
  const std::size_t n = std::max<std::size_t>(1, threads), tasks = sequences_times_kv_heads;
  if (tasks == 0) return HostFlashBackwardForm::kFused;
  const std::size_t rounds = (tasks + n - 1) / n;  // the fused form's tasks are all the same size
  const double busy = static_cast<double>(tasks) / static_cast<double>(std::max<std::size_t>(1, rounds * n));
  return busy * kHostFlashSplitCost < 1.0 ? HostFlashBackwardForm::kSplit : HostFlashBackwardForm::kFused;
}

void host_flash_backward(const HostFlashBackward& a, unsigned threads) {
  const HostVectorUnit unit = checked_unit(a.unit, a.query_block, a.key_block);
  const HostFlashBackwardForm form = a.form.value_or(host_flash_backward_form(a.B * a.heads.kv_heads, threads));
  const std::vector<BackwardTask> tasks = backward_tasks(a, form);
  run_tasks<BackwardWorkspace>(tasks.size(), threads,
                               [&](std::size_t i, BackwardWorkspace& w) { backward_task(unit, a, tasks[i], w); });
}

}  // namespace paxocl::kernels
