#include "models/layers/ssm.h"

#include <complex>
#include <vector>

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::models {

using kernels::SsmConvolution;

namespace {
using Complex = std::complex<double>;

std::size_t checked_sizes(const Param& c_re, const Param& c_im, const Param& d, const SsmConfig& config,
                          std::size_t channels, std::size_t max_batch, std::size_t max_seq_len,
                          const std::string& name) {
  if (channels == 0 || max_batch == 0 || max_seq_len == 0) {
    throw ConfigError(fmt::format("{}: the SSM layer needs channels, max_batch and max_seq_len >= 1, got {}, {}, {}",
                                  name, channels, max_batch, max_seq_len));
  }
  config.validate(static_cast<int>(max_seq_len));
  const auto N = static_cast<std::size_t>(config.state_size);
  auto require = [&](const FloatBuffer& b, std::size_t count, const char* what) {
    if (b.count() < count) {
      throw ConfigError(fmt::format("{}: {} holds {} floats, the layer needs {} ({})", name, what, b.count(), count,
                                    count == channels ? "C" : "SSM_NHEADS x C"));
    }
  };
  require(c_re.value, N * channels, "C_re");
  require(c_re.grad, N * channels, "C_re's gradient");
  require(c_im.value, N * channels, "C_im");
  require(c_im.grad, N * channels, "C_im's gradient");
  require(d.value, channels, "D");
  require(d.grad, channels, "D's gradient");
  return N;
}

// W z^l (l < length) and (z, W) per state, from A and dt in double: z = exp(dt A), W = (z - 1) / A,
// exp(l dt A) evaluated directly at each l (repeated products would drift at large l).
struct FrozenTables {
  std::vector<float> powers;  // (length, N) complex
  std::vector<float> steps;   // (N) x (Re z, Im z, Re W, Im W)
};
FrozenTables frozen_tables(const SsmConfig& config, std::size_t length) {
  const std::vector<Complex> a = ssm_state_matrix(config);
  const double dt = config.step_size;
  FrozenTables t;
  t.powers.reserve(2 * length * a.size());
  for (std::size_t l = 0; l < length; ++l) {
    for (const Complex& an : a) {
      const Complex p = (std::exp(dt * an) - 1.0) / an * std::exp(static_cast<double>(l) * dt * an);
      t.powers.push_back(static_cast<float>(p.real()));
      t.powers.push_back(static_cast<float>(p.imag()));
    }
  }
  for (const Complex& an : a) {
    const Complex z = std::exp(dt * an), w = (z - 1.0) / an;
    t.steps.insert(t.steps.end(), {static_cast<float>(z.real()), static_cast<float>(z.imag()),
                                   static_cast<float>(w.real()), static_cast<float>(w.imag())});
  }
  return t;
}

FloatBuffer uploaded(const device::Device& device, const std::vector<float>& values, const std::string& name) {
  FloatBuffer b = make_buffer(device, values.size(), name);
  device::Queue queue = device.make_queue();  // the constructor has no compute queue; a blocking write
  queue.write(b, std::span<const float>(values));
  return b;
}
}  // namespace

Ssm::Ssm(const BufferSource& buffers, device::DType act, Param c_re, Param c_im, Param d, const SsmConfig& config,
         std::size_t channels, std::size_t max_batch, std::size_t max_seq_len, const std::string& name)
    : c_re_(std::move(c_re)),
      c_im_(std::move(c_im)),
      d_(std::move(d)),
      channels_(channels),
      states_(checked_sizes(c_re_, c_im_, d_, config, channels, max_batch, max_seq_len, name)),
      max_batch_(max_batch),
      max_seq_len_(max_seq_len),
      name_(name),
      requested_(kernels::ssm_convolution_from_name(config.convolution)),
      kernel_(buffers.saved(max_seq_len * channels, name + ".K")),
      kernel_grad_(buffers.transient(max_seq_len * channels, name + ".dK")),
      state_(make_buffer(buffers.device(), 2 * max_batch * states_ * channels, name + ".state")),
      y_(buffers.saved(act, max_batch * max_seq_len * channels, name + ".y")),
      du_(buffers.transient(act, max_batch * max_seq_len * channels, name + ".du")) {
  const device::Device& device = buffers.device();
  const FrozenTables tables = frozen_tables(config, max_seq_len);
  powers_ = uploaded(device, tables.powers, name + ".powers");
  steps_ = uploaded(device, tables.steps, name + ".steps");
}

void Ssm::require_shape(const LayerContext& ctx, const char* what) const {
  if (ctx.batch == 0 || ctx.seq_len == 0 || ctx.batch > max_batch_ || ctx.seq_len > max_seq_len_) {
    throw DataError(fmt::format("{}: {} of B={} T={} outside the layer's 1..{} x 1..{}", name_, what, ctx.batch,
                                ctx.seq_len, max_batch_, max_seq_len_));
  }
}

ActBuffer& Ssm::forward(LayerContext& ctx, const ActBuffer& u, std::optional<std::size_t> decode_position) {
  require_shape(ctx, decode_position ? "decoding step" : "forward");
  const std::size_t B = ctx.batch, T = ctx.seq_len, C = channels_;
  if (decode_position) {
    const std::size_t p = *decode_position;
    if (p != 0 && p != decode_next_) {
      throw DataError(fmt::format("{}: decoding at position {} does not continue the state, which stands at {}", name_,
                                  p, decode_next_));
    }
    ctx.kernels.ssm.decode(y_, state_, u, c_re_.value, c_im_.value, d_.value, steps_, B, T, C, states_, p == 0);
    decode_next_ = p + T;
    u_ = nullptr;
    return y_;
  }
  ctx.kernels.ssm.kernel(kernel_, powers_, c_re_.value, c_im_.value, T, C, states_);
  method_ = ctx.kernels.ssm.resolve(requested_, B, T, C);
  ctx.kernels.ssm.conv_forward(method_, y_, u, kernel_, d_.value, B, T, C);
  u_ = &u;
  return y_;
}

ActBuffer& Ssm::backward(LayerContext& ctx, const ActBuffer& dy, const std::function<void(ActBuffer&)>& after_dx) {
  require_shape(ctx, "backward");
  if (u_ == nullptr) throw DataError(fmt::format("{}: backward without a training forward before it", name_));
  const std::size_t B = ctx.batch, T = ctx.seq_len, C = channels_;
  ctx.kernels.ssm.conv_backward(method_, du_, kernel_grad_, d_.grad, dy, *u_, kernel_, d_.value, B, T, C, after_dx);
  ctx.kernels.ssm.kernel_grad(c_re_.grad, c_im_.grad, kernel_grad_, powers_, T, C, states_);
  return du_;
}

}  // namespace paxocl::models
