// Rotary position embeddings (models/layers/rotary_embedding.h) on act_t activations
// (kernels_cl/dtype.cl), computed in float and rounded once.
// qkv (N, width) rows [q: H heads | k: Hkv heads | v: Hkv heads] of hs = 2*pairs dims each; the
// first `heads` = H + Hkv heads of a row (q and k) are rotated in place, v is left alone. Hugging
// Face LLaMA's half-split layout: within a head the pair (i, i + pairs), i < pairs = hs/2, turns
// by the angle of the row's position p = r % T + position_offset and frequency i:
//   (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin),   cos, sin = tables[p * pairs + i]   (max_positions, pairs)
// sign = -1 turns by minus the angle (the transpose: the backward of the rotation).

// One work-item per pair (row, head, i).
__kernel void rope_rotate(__global act_t* qkv, __global const float* cos_table, __global const float* sin_table,
                          const uint T, const uint heads, const uint width, const uint pairs,
                          const uint position_offset, const float sign, const uint items) {
  const uint item = get_global_id(0);
  if (item >= items) return;
  const uint i = item % pairs, head = (item / pairs) % heads, r = item / (pairs * heads);
  const size_t table = (size_t)(r % T + position_offset) * pairs + i;
  const float c = cos_table[table], s = sign * sin_table[table];
  const size_t x = (size_t)r * width + (size_t)head * 2 * pairs + i;
  const float x1 = act_load(qkv, x), x2 = act_load(qkv, x + pairs);
  act_store(qkv, x, x1 * c - x2 * s);
  act_store(qkv, x + pairs, x2 * c + x1 * s);
}
