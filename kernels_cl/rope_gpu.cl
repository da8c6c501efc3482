// Rotary position embeddings, GPU twin of rope.cl (same formulas and argument list; see there for
// the layout): a work-item turns 4 consecutive pairs (row, head, i0 .. i0 + 3) with vector loads of
// both halves and of the cos/sin tables, and pairs % 4 leftovers one by one. items = rows x heads x
// ceil(pairs / 4).

PAX_GPU_KERNEL void rope_rotate(__global act_t* qkv, __global const float* cos_table, __global const float* sin_table,
                                const uint T, const uint heads, const uint width, const uint pairs,
                                const uint position_offset, const float sign, const uint items) {
  const uint item = get_global_id(0);
  if (item >= items) return;
  const uint quads = (pairs + 3) / 4, row_quads = quads * heads;
  const uint r = item / row_quads, in_row = item - r * row_quads, head = in_row / quads, i0 = (in_row - head * quads) * 4;
  const size_t table = (size_t)(r % T + position_offset) * pairs + i0;
  const size_t x = (size_t)r * width + (size_t)head * 2 * pairs + i0;
  if (i0 + 4 <= pairs) {
    const float4 c = vload4(0, cos_table + table), s = sign * vload4(0, sin_table + table);
    const float4 x1 = act_load4(qkv, x), x2 = act_load4(qkv, x + pairs);
    act_store4(qkv, x, x1 * c - x2 * s);
    act_store4(qkv, x + pairs, x2 * c + x1 * s);
    return;
  }
  for (uint j = 0; i0 + j < pairs; ++j) {
    const float c = cos_table[table + j], s = sign * sin_table[table + j];
    const float x1 = act_load(qkv, x + j), x2 = act_load(qkv, x + pairs + j);
    act_store(qkv, x + j, x1 * c - x2 * s);
    act_store(qkv, x + pairs + j, x2 * c + x1 * s);
  }
}
