// CPU variant of rope.cl (PoCL): the same kernel and arguments, one row per work-item; its
// position's cos and sin are read once, 16 frequencies at a time in float16 vectors, and applied
// to every q and k head of the row. Layout and formulas as in rope.cl.

__kernel void rope_rotate(__global act_t* qkv, __global const float* cos_table, __global const float* sin_table,
                          const uint T, const uint heads, const uint width, const uint pairs,
                          const uint position_offset, const float sign, const uint rows) {
  const uint r = get_global_id(0);
  if (r >= rows) return;
  __global const float* cos_row = cos_table + (size_t)(r % T + position_offset) * pairs;
  __global const float* sin_row = sin_table + (size_t)(r % T + position_offset) * pairs;
  __global act_t* row = qkv + (size_t)r * width;
  uint i = 0;
  for (; i + 16 <= pairs; i += 16) {
    const float16 c = vload16(0, cos_row + i), s = sign * vload16(0, sin_row + i);
    for (uint head = 0; head < heads; ++head) {
      __global act_t* x = row + (size_t)head * 2 * pairs + i;
      const float16 x1 = act_load16(x), x2 = act_load16(x + pairs);
      act_store16(x, x1 * c - x2 * s);
      act_store16(x + pairs, x2 * c + x1 * s);
    }
  }
  for (; i < pairs; ++i) {
    const float c = cos_row[i], s = sign * sin_row[i];
    for (uint head = 0; head < heads; ++head) {
      const size_t x = (size_t)head * 2 * pairs + i;
      const float x1 = act_load(row, x), x2 = act_load(row, x + pairs);
      act_store(row, x, x1 * c - x2 * s);
      act_store(row, x + pairs, x2 * c + x1 * s);
    }
  }
}
