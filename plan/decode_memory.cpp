#include "plan/decode_memory.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/errors.h"
#include "models/parameter_layout.h"
#include "plan/layout_spec.h"

namespace paxocl::plan {

namespace {

bool fits(const DecodeMemory& m, const MemoryLimits& limits) {
  return static_cast<double>(m.total()) <= limits.memory_bytes &&
         (limits.max_alloc_bytes == 0 || m.largest <= limits.max_alloc_bytes);
}

DecodeMemory with_samples(DecodeSpec spec, std::size_t n) {
  spec.num_samples = n;
  return decode_memory(spec);
}

}  // namespace

DecodeMemory decode_memory(const DecodeSpec& spec) {
  const models::ModelConfig& model = spec.model;
  // One float32 device, no mesh: training's layout rule (device_layout) for the decode model.
  LayoutSpec one_device;
  one_device.model = model;
  one_device.base_address_align_bytes = spec.base_address_align_bytes;
  const models::ParameterLayout layout = device_layout(one_device);
  DecodeMemory m;
  const std::size_t parameter_bytes = layout.total() * sizeof(float);
  m.parameters = 2 * parameter_bytes;

  ActivationShape shape;
  shape.sequences = spec.num_samples;
  shape.seq_len = static_cast<std::size_t>(model.max_seq_len());
  shape.act = device::DType::kF32;
  shape.flash_attention = spec.flash_attention;
  const std::vector<BufferSize> buffers = activation_buffers(model, shape);
  m.activations = total_bytes(buffers);

  const int heads = model.visit([](const auto& c) { return c.num_heads; });
  const int head_size = model.visit([](const auto& c) { return c.dims_per_head; });
  const int kv_heads = model.is_llama() ? model.llama().num_kv_heads : heads;
  const int attention_blocks = model.num_blocks() - (model.is_gpt() ? model.gpt().ssm_blocks() : 0);
  const std::size_t kv_values = spec.num_samples * shape.seq_len * 2 * static_cast<std::size_t>(kv_heads) *
                                static_cast<std::size_t>(head_size);
  const std::size_t kv_cache = kv_values * sizeof(float);
  m.kv_caches = static_cast<std::size_t>(attention_blocks) * kv_cache;
  m.largest = std::max({parameter_bytes, largest(buffers).bytes, attention_blocks > 0 ? kv_cache : 0});
  return m;
}

void require_decode_fits(const DecodeSpec& spec, const MemoryLimits& limits, const std::string& device_name) {
  if (limits.memory_bytes <= 0) return;  // a driver that reports no memory: nothing to check against
  const DecodeMemory m = decode_memory(spec);
  if (fits(m, limits)) return;
  // The most samples that fit: memory grows with the count, so bisect.
  std::size_t lo = 0, hi = spec.num_samples;  // fits(lo) (0: none known), !fits(hi)
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    (fits(with_samples(spec, mid), limits) ? lo : hi) = mid;
  }
  std::string why = fmt::format("decoding {} sample(s) of up to {} positions needs {:.2f} GiB on '{}' (parameters and "
                                "gradients {:.2f} GiB, activations {:.2f} GiB, key/value caches {:.2f} GiB), the device "
                                "has {:.2f} GiB",
                                spec.num_samples, spec.model.max_seq_len(), gib(static_cast<double>(m.total())), device_name,
                                gib(static_cast<double>(m.parameters)), gib(static_cast<double>(m.activations)),
                                gib(static_cast<double>(m.kv_caches)), gib(limits.memory_bytes));
  if (limits.max_alloc_bytes > 0 && m.largest > limits.max_alloc_bytes) {
    why += fmt::format(" and allocates at most {:.2f} GiB at once (the largest buffer: {:.2f} GiB)",
                       gib(static_cast<double>(limits.max_alloc_bytes)), gib(static_cast<double>(m.largest)));
  }
  why += lo > 0 ? fmt::format("; try --num_samples={}", lo)
                : std::string("; not even one sample fits: use a device with more memory");
  throw ConfigError(why);
}

}  // namespace paxocl::plan
