// Casts between float32 and act_t (kernels_cl/dtype.cl) buffers holding the same elements at the
// same offsets: the per-step 16-bit copy of the weights under mixed precision, and float images
// of 16-bit activations. Elements [offset, offset + n).

__kernel void cast_to_act(__global act_t* out, __global const float* in, const uint offset, const uint n) {
  const uint i = get_global_id(0);
  if (i < n) act_store(out, (size_t)offset + i, in[(size_t)offset + i]);
}
__kernel void cast_to_float(__global float* out, __global const act_t* in, const uint offset, const uint n) {
  const uint i = get_global_id(0);
  if (i < n) out[(size_t)offset + i] = act_load(in, (size_t)offset + i);
}

// A float (rows, cols) block into a column block of act_t rows `out_ld` apart:
// out[out_offset + r*out_ld + c] = in[r*cols + c]   (n = rows*cols; grouped-query attention's dk, dv).
__kernel void cast_rows_to_act(__global act_t* out, __global const float* in, const uint out_offset,
                               const uint out_ld, const uint cols, const uint n) {
  const uint i = get_global_id(0);
  if (i < n) act_store(out, (size_t)out_offset + (size_t)(i / cols) * out_ld + i % cols, in[i]);
}
