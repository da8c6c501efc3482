// Casts between float32 and act_t, GPU twin of cast.cl (same kernels and argument lists): each
// work-item owns 4 consecutive elements, read and written with vector loads and stores (vload4,
// act_load4 / act_store4), a scalar tail past the last whole four. Elements [offset, offset + n).

PAX_GPU_KERNEL void cast_to_act(__global act_t* out, __global const float* in, const uint offset, const uint n) {
  const uint i = get_global_id(0) * 4;
  const size_t at = (size_t)offset + i;
  if (i + 4 <= n) {
    act_store4(out, at, vload4(0, in + at));
    return;
  }
  for (uint j = i; j < n; ++j) act_store(out, (size_t)offset + j, in[(size_t)offset + j]);
}

PAX_GPU_KERNEL void cast_to_float(__global float* out, __global const act_t* in, const uint offset, const uint n) {
  const uint i = get_global_id(0) * 4;
  const size_t at = (size_t)offset + i;
  if (i + 4 <= n) {
    vstore4(act_load4(in, at), 0, out + at);
    return;
  }
  for (uint j = i; j < n; ++j) out[(size_t)offset + j] = act_load(in, (size_t)offset + j);
}

// A float (rows, cols) block into a column block of act_t rows `out_ld` apart (cast.cl): the four
// elements are read as one vector and stored one by one, since they may straddle a row's end.
PAX_GPU_KERNEL void cast_rows_to_act(__global act_t* out, __global const float* in, const uint out_offset,
                                     const uint out_ld, const uint cols, const uint n) {
  const uint i = get_global_id(0) * 4;
  if (i >= n) return;
  uint r = i / cols, c = i - r * cols;
  const uint count = n - i < 4u ? n - i : 4u;
  float v[4];
  if (count == 4) vstore4(vload4(0, in + i), 0, v);
  else for (uint j = 0; j < count; ++j) v[j] = in[i + j];
  for (uint j = 0; j < count; ++j) {
    act_store(out, (size_t)out_offset + (size_t)r * out_ld + c, v[j]);
    if (++c == cols) {
      c = 0;
      ++r;
    }
  }
}
