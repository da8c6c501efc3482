// Casts between float32 and act_t, CPU twin of cast.cl (PoCL; same kernels and argument lists):
// each work-item owns 16 consecutive elements, read and written as float16 vectors (act_load16 /
// act_store16), a scalar tail past the last whole sixteen. One element per work-item left the
// per-step bfloat16 weight copy to PoCL's vectorizer across work-items: 51 ms for GPT-2 124M's
// weights on 2 Xeon cores, a third of the bandwidth Adam reaches. Elements [offset, offset + n).

__kernel void cast_to_act(__global act_t* out, __global const float* in, const uint offset, const uint n) {
  const uint i = get_global_id(0) * 16;
  if (i >= n) return;
  const size_t at = (size_t)offset + i;
  if (i + 16 <= n) {
    act_store16(out + at, vload16(0, in + at));
    return;
  }
  for (uint j = i; j < n; ++j) act_store(out, (size_t)offset + j, in[(size_t)offset + j]);
}

__kernel void cast_to_float(__global float* out, __global const act_t* in, const uint offset, const uint n) {
  const uint i = get_global_id(0) * 16;
  if (i >= n) return;
  const size_t at = (size_t)offset + i;
  if (i + 16 <= n) {
    vstore16(act_load16(in + at), 0, out + at);
    return;
  }
  for (uint j = i; j < n; ++j) out[(size_t)offset + j] = act_load(in, (size_t)offset + j);
}

// A float (rows, cols) block into a column block of act_t rows `out_ld` apart (cast.cl): the
// work-item's 16 elements one by one, since they may straddle rows (grouped-query attention's
// dk, dv: small blocks, once per layer).
__kernel void cast_rows_to_act(__global act_t* out, __global const float* in, const uint out_offset,
                               const uint out_ld, const uint cols, const uint n) {
  const uint i = get_global_id(0) * 16;
  if (i >= n) return;
  uint r = i / cols, c = i - r * cols;
  const uint end = n - i < 16u ? n : i + 16u;
  for (uint j = i; j < end; ++j) {
    act_store(out, (size_t)out_offset + (size_t)r * out_ld + c, in[j]);
    if (++c == cols) {
      c = 0;
      ++r;
    }
  }
}
