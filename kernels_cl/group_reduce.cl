// Work-group helpers of the GPU twins (x_gpu.cl), and the kernels several twins share, prepended
// after dtype.cl to every program built with -DPAX_WG (program_loader.cpp). PAX_WG work-items per group (a power of two). Sums are
// trees over the group in one fixed order, so a result never depends on timing: bit-reproducible.
// Every work-item of the group must call them (they hold barriers); `scratch` is __local float[PAX_WG]
// and is free again when they return.

#ifndef PAX_WG
#error "GPU twins are built with -DPAX_WG=<work-group size>"
#endif
#define PAX_GPU_KERNEL __kernel __attribute__((reqd_work_group_size(PAX_WG, 1, 1)))
// Before a loop that sums one load per iteration down a column: unrolled by 8, so that 8 loads are
// in flight while the adds keep their order (the sum is the same, bit for bit). Rolled, each load
// waited for the add before it.
#define PAX_LOADS_IN_FLIGHT _Pragma("unroll 8")

// Teams: aligned runs of `team` work-items (a power of two dividing PAX_WG), e.g. the
// PAX_ROW_TEAM work-items of one row of a norm (several rows per group). -DPAX_ROW_TEAM comes from
// the host (kernel_set.cpp: kGpuRowTeam), which sizes the norms' launches by it.
#ifndef PAX_ROW_TEAM
#define PAX_ROW_TEAM 32
#endif
#if PAX_WG % PAX_ROW_TEAM
#error "group_reduce.cl: PAX_ROW_TEAM must divide PAX_WG"
#endif
#define PAX_ROWS_PER_GROUP (PAX_WG / PAX_ROW_TEAM)

// A norm kernel's row n and lane (within its team) for this work-item, and `cols`: C for a row below
// N, else 0 (a team past the last row reads and writes nothing, but passes every barrier with the
// rest of its group); `at` = n * C, the row's first element.
#define PAX_TEAM_ROW_AND_LANE                                                                  \
  const uint lane = get_local_id(0) % PAX_ROW_TEAM;                                            \
  const uint n = get_group_id(0) * PAX_ROWS_PER_GROUP + get_local_id(0) / PAX_ROW_TEAM;         \
  const uint cols = n < N ? C : 0;                                                             \
  const size_t at = (size_t)n * C;

// Columns a norm's lane keeps in registers: rows up to PAX_NORM_CACHED * PAX_ROW_TEAM columns are
// read once, longer ones re-read their tail.
#define PAX_NORM_CACHED 32

// A norm's input column c of row `at`: x, or with has_delta x + delta rounded to act_t and stored
// into sum_out (the residual fusion normalises the sum as stored).
static inline __attribute__((always_inline)) float pax_norm_input(__global act_t* sum_out, __global const act_t* x,
                                                                  __global const act_t* delta, const size_t at,
                                                                  const uint c, const uint has_delta) {
  float value = act_load(x, at + c);
  if (has_delta) {
    value = act_round(value + act_load(delta, at + c));
    act_store(sum_out, at + c, value);
  }
  return value;
}

// This lane's cached input columns: v[k] = column lane + k PAX_ROW_TEAM (0 from cols on), every
// load of x issued before any use, then the residual fusion's adds and stores.
static inline __attribute__((always_inline)) void pax_norm_input_cached(float* v, __global act_t* sum_out,
                                                                        __global const act_t* x,
                                                                        __global const act_t* delta, const size_t at,
                                                                        const uint lane, const uint cols,
                                                                        const uint has_delta) {
#pragma unroll
  for (uint k = 0; k < PAX_NORM_CACHED; ++k) {
    const uint c = lane + k * PAX_ROW_TEAM;
    v[k] = c < cols ? act_load(x, at + c) : 0.0f;
  }
  if (!has_delta) return;
#pragma unroll
  for (uint k = 0; k < PAX_NORM_CACHED; ++k) {
    const uint c = lane + k * PAX_ROW_TEAM;
    if (c < cols) {
      v[k] = act_round(v[k] + act_load(delta, at + c));
      act_store(sum_out, at + c, v[k]);
    }
  }
}

// A norm backward's cached columns: g[k] = dout * w and xhat[k] = (x - mu) * rs at column
// lane + k PAX_ROW_TEAM (0 from cols on; RMSNorm passes mu = 0).
static inline __attribute__((always_inline)) void pax_norm_grad_cached(float* g, float* xhat, __global const act_t* dout,
                                                                       __global const act_t* w,
                                                                       __global const act_t* x, const size_t at,
                                                                       const uint lane, const uint cols,
                                                                       const float mu, const float rs) {
#pragma unroll
  for (uint k = 0; k < PAX_NORM_CACHED; ++k) {
    const uint c = lane + k * PAX_ROW_TEAM;
    g[k] = xhat[k] = 0.0f;
    if (c < cols) {
      g[k] = act_load(dout, at + c) * act_load(w, c);
      xhat[k] = (act_load(x, at + c) - mu) * rs;
    }
  }
}

// The sum of v over this work-item's team, returned to all of it (a tree in one fixed order).
inline float pax_team_sum(float v, __local float* scratch, const uint team) {
  const uint lid = get_local_id(0), lane = lid % team;
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = team / 2; s > 0; s >>= 1) {
    if (lane < s) scratch[lid] += scratch[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float total = scratch[lid - lane];
  barrier(CLK_LOCAL_MEM_FENCE);  // scratch may be reused at once
  return total;
}

// Two sums at once (one tree): (sum of a, sum of b) over the team.
inline float2 pax_team_sum2(float2 v, __local float2* scratch, const uint team) {
  const uint lid = get_local_id(0), lane = lid % team;
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = team / 2; s > 0; s >>= 1) {
    if (lane < s) scratch[lid] += scratch[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float2 total = scratch[lid - lane];
  barrier(CLK_LOCAL_MEM_FENCE);
  return total;
}

// The sum of every work-item's v, returned to all of them.
inline float pax_group_sum(float v, __local float* scratch) { return pax_team_sum(v, scratch, PAX_WG); }

// A running softmax state: m the maximum seen, s the sum of exp(x - m), i the first index of m.
typedef struct {
  float m, s;
  uint i;
} pax_softmax_state;

inline pax_softmax_state pax_softmax_empty(void) {
  pax_softmax_state r = {-INFINITY, 0.0f, UINT_MAX};
  return r;
}

// Folds one element x at index i (indices arrive in increasing order per work-item).
inline pax_softmax_state pax_softmax_push(pax_softmax_state a, float x, uint i) {
  if (x > a.m) {
    a.s = a.s * exp(a.m - x) + 1.0f;  // exp(-inf) = 0 for the empty state
    a.m = x;
    a.i = i;
  } else {
    a.s += exp(x - a.m);
  }
  return a;
}

// Merges two states; equal maxima keep the smaller index (the first argmax).
inline pax_softmax_state pax_softmax_merge(pax_softmax_state a, pax_softmax_state b) {
  if (b.s == 0.0f) return a;
  if (a.s == 0.0f) return b;
  pax_softmax_state r;
  r.m = fmax(a.m, b.m);
  r.s = a.s * exp(a.m - r.m) + b.s * exp(b.m - r.m);
  r.i = a.m == b.m ? min(a.i, b.i) : (a.m > b.m ? a.i : b.i);
  return r;
}

// The merge of every work-item's state, returned to all of them (tree in a fixed order).
inline pax_softmax_state pax_group_softmax(pax_softmax_state v, __local pax_softmax_state* scratch) {
  const uint lid = get_local_id(0);
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = PAX_WG / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] = pax_softmax_merge(scratch[lid], scratch[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const pax_softmax_state total = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return total;
}

// Row-block column sums, stage 2 (the GPU twins' parameter gradients: stage 1 wrote one partial
// row per block of rows, from element `first` of partials): dst[c] += sum over b of
// partials[first + b * C + c], blocks in order.
PAX_GPU_KERNEL void pax_add_block_sums(__global float* dst, __global const float* partials, const uint first,
                                       const uint blocks, const uint C) {
  const uint c = get_global_id(0);
  if (c >= C) return;
  partials += first;
  float acc = 0.0f;
  PAX_LOADS_IN_FLIGHT
  for (uint b = 0; b < blocks; ++b) acc += partials[(size_t)b * C + c];
  dst[c] += acc;
}

// Softmax statistics of a row split into chunks of PAX_SOFTMAX_CHUNK columns (the cross-entropy
// twins' first pass): group (j, n) folds columns [j * chunk, (j + 1) * chunk) of row n that are
// below `real` (the rest is padding) and writes stats (N, chunks, 4) for (n, j):
//   [0] the chunk's max, [1] the sum of exp(logit - that max), [2] as_float(first argmax column),
//   [3] the logit of column target[n] - target_offset if it lies in the chunk, else 0.
// A chunk with no real column writes (-FLT_MAX, 0, UINT_MAX, 0).    logits: (N, row_stride) act_t
#define PAX_SOFTMAX_CHUNK (PAX_WG * 8)
// A whole chunk whose row starts 4-aligned is read in quads: work-item l's columns are the
// PAX_SOFTMAX_QUADS runs of 4 at pax_softmax_quad(begin, q) = begin + 4 (l + q PAX_WG), so a warp's
// loads are contiguous and all of a work-item's loads are issued before its first exp (one
// element per load, each waiting on the last exp, made the 16-bit passes latency-bound: half the
// float32 passes' bytes per second on an H200). Other chunks go column by column, l + k PAX_WG.
#define PAX_SOFTMAX_QUADS (PAX_SOFTMAX_CHUNK / (4 * PAX_WG))
inline uint pax_softmax_quad(const uint begin, const uint q) { return begin + 4 * (get_local_id(0) + q * PAX_WG); }
inline bool pax_softmax_in_quads(const uint begin, const uint end, const uint row_stride) {
  return end - begin == PAX_SOFTMAX_CHUNK && row_stride % 4 == 0;
}

PAX_GPU_KERNEL void pax_softmax_chunk_stats(__global const act_t* logits, __global float* stats,
                                            __global const int* targets, const uint N, const uint row_stride,
                                            const uint real, const uint target_offset) {
  __local pax_softmax_state scratch[PAX_WG];
  const uint j = get_group_id(0), n = get_group_id(1), chunks = get_num_groups(0), lid = get_local_id(0);
  if (n >= N) return;  // the whole group
  __global const act_t* row = logits + (size_t)n * row_stride;
  const uint begin = j * PAX_SOFTMAX_CHUNK, end = min(real, begin + PAX_SOFTMAX_CHUNK);
  pax_softmax_state state = pax_softmax_empty();
  if (pax_softmax_in_quads(begin, end, row_stride)) {
    float4 x[PAX_SOFTMAX_QUADS];
#pragma unroll
    for (uint q = 0; q < PAX_SOFTMAX_QUADS; ++q) x[q] = act_load4(row, pax_softmax_quad(begin, q));
#pragma unroll
    for (uint q = 0; q < PAX_SOFTMAX_QUADS; ++q) {  // columns in increasing order, as push needs
      const uint v = pax_softmax_quad(begin, q);
      state = pax_softmax_push(state, x[q].x, v);
      state = pax_softmax_push(state, x[q].y, v + 1);
      state = pax_softmax_push(state, x[q].z, v + 2);
      state = pax_softmax_push(state, x[q].w, v + 3);
    }
  } else {
    for (uint v = begin + lid; v < end; v += PAX_WG) state = pax_softmax_push(state, act_load(row, v), v);
  }
  state = pax_group_softmax(state, scratch);
  if (lid != 0) return;
  const uint target = (uint)targets[n] - target_offset;  // wraps below the offset: then >= real
  __global float* out = stats + ((size_t)n * chunks + j) * 4;
  out[0] = state.s == 0.0f ? -FLT_MAX : state.m;
  out[1] = state.s;
  out[2] = as_float(state.i);
  out[3] = target >= begin && target < end ? act_load(row, target) : 0.0f;
}

// Row n's chunk statistics combined in chunk order: (max, sum of exp(logit - max), first argmax,
// target logit): a few dozen floats, read by one work-item per row.
inline pax_softmax_state pax_softmax_row_stats(__global const float* stats, const uint n, const uint chunks,
                                               float* target_logit) {
  pax_softmax_state row = pax_softmax_empty();
  float t = 0.0f;
  for (uint j = 0; j < chunks; ++j) {
    __global const float* c = stats + ((size_t)n * chunks + j) * 4;
    const pax_softmax_state chunk = {c[0], c[1], as_uint(c[2])};
    row = pax_softmax_merge(row, chunk);
    t += c[3];
  }
  *target_logit = t;
  return row;
}

// The cross-entropy twins' second pass over one chunk [begin, end) of a row (row_stride columns,
// `real` of them not padding): each logit x at column v becomes g (exp(x - lse) - [v == target])
// below `real`, 0 from there; in quads where pax_softmax_in_quads (as the first pass).
inline float pax_softmax_gradient(const float x, const uint v, const uint real, const uint target, const float lse,
                                  const float g) {
  return v < real ? g * (exp(x - lse) - (v == target ? 1.0f : 0.0f)) : 0.0f;
}
inline void pax_softmax_chunk_gradient(__global act_t* row, const uint row_stride, const uint begin, const uint end,
                                       const uint real, const uint target, const float lse, const float g) {
  if (pax_softmax_in_quads(begin, end, row_stride)) {
    float4 x[PAX_SOFTMAX_QUADS];
#pragma unroll
    for (uint q = 0; q < PAX_SOFTMAX_QUADS; ++q) x[q] = act_load4(row, pax_softmax_quad(begin, q));
#pragma unroll
    for (uint q = 0; q < PAX_SOFTMAX_QUADS; ++q) {
      const uint v = pax_softmax_quad(begin, q);
      act_store4(row, v,
                 (float4)(pax_softmax_gradient(x[q].x, v, real, target, lse, g),
                          pax_softmax_gradient(x[q].y, v + 1, real, target, lse, g),
                          pax_softmax_gradient(x[q].z, v + 2, real, target, lse, g),
                          pax_softmax_gradient(x[q].w, v + 3, real, target, lse, g)));
    }
    return;
  }
  for (uint v = begin + get_local_id(0); v < end; v += PAX_WG) {
    act_store(row, v, pax_softmax_gradient(act_load(row, v), v, real, target, lse, g));
  }
}
