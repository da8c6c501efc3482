// CPU variant of residual.cl (PoCL): 16 consecutive elements per work-item with float16 vectors;
// the last item takes the tail element by element.
__kernel void residual_add(__global act_t* out, __global const act_t* a, __global const act_t* b, const uint n) {
  const uint base = get_global_id(0) * 16;
  if (base >= n) return;
  if (base + 16 <= n) {
    act_store16(out + base, act_load16(a + base) + act_load16(b + base));
  } else {
    for (uint i = base; i < n; ++i) act_store(out, i, act_load(a, i) + act_load(b, i));
  }
}
