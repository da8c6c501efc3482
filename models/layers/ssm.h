// Ssm: praxis's S4D state-space layer (praxis/layers/ssm.py, SSM: diagonal A frozen, zero-order hold,
// B = 1; the math in models/ssm_config.h) on one device, per channel c of C:
//   u (N = B*T rows, C) -> y (N, C) = causal_conv(K, u) + D u,
//   K (T, C): K[l, c] = Re sum_n C[n, c] W[n] z[n]^l,  W = (exp(dt A) - 1) / A,  z = exp(dt A).
// Trainable: C = c_re + i c_im (state_size, C) and D (C), read through Param::value (float32: K is
// computed in float32, as praxis does) with gradients accumulated into Param::grad. The frozen part,
// W z^l for l < max_seq_len (exp(l dt A) evaluated directly, in double), is a table the layer builds
// once. The convolution runs through clFFT or directly (SsmConfig::convolution; kernels_cl/ssm_kernels.h
// falls back to direct when clFFT fails its self-check); decoding runs the recurrent form from a
// complex state (max_batch, state_size, C) the layer keeps. u, y, dy, du are in the activation dtype.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "models/layers/buffer_source.h"
#include "models/layers/layer_context.h"
#include "models/ssm_config.h"

namespace paxocl::models {

class Ssm {
 public:
  // c_re, c_im: (N, C) row-major (n major, as praxis's [nh, dim]); d: (C). Throws ConfigError for a
  // bad config (SsmConfig::validate with max_seq_len), zero sizes or parameter views too short.
  // y and K are saved (the ssm site), dK and du transient, the tables and the decoding state its
  // own (layers/buffer_source.h).
  Ssm(const BufferSource& buffers, device::DType act, Param c_re, Param c_im, Param d, const SsmConfig& config,
      std::size_t channels, std::size_t max_batch, std::size_t max_seq_len, const std::string& name);

  // u (N = B*T rows, C) in the activation dtype, rows b-major (row b*T + t), T = ctx.seq_len, B = ctx.batch.
  // decode_position p: decoding; u holds each sequence's next T tokens at positions p..p+T-1; runs the recurrent form
  // from the layer's state (p == 0 zeroes the state first; B <= max_batch). Returns the layer's own buffer (N, C).
  // A p other than 0 that does not continue the state (the previous call's p + T) is a DataError.
  ActBuffer& forward(LayerContext& ctx, const ActBuffer& u, std::optional<std::size_t> decode_position = {});
  // dy (N, C) -> du (N, C); accumulates dC_re, dC_im, dD. `after_dx`, if given, is called once du is enqueued (same
  // contract as Linear::backward's). forward remembered u (the caller keeps it alive).
  ActBuffer& backward(LayerContext& ctx, const ActBuffer& dy, const std::function<void(ActBuffer&)>& after_dx = {});
  ActBuffer& output() { return y_; }  // the last forward's

 private:
  void require_shape(const LayerContext& ctx, const char* what) const;

  Param c_re_, c_im_, d_;
  std::size_t channels_, states_, max_batch_, max_seq_len_;
  std::string name_;
  kernels::SsmConvolution requested_;
  kernels::SsmConvolution method_ = kernels::SsmConvolution::kDirect;  // how the last forward ran
  FloatBuffer powers_;       // (max_seq_len, N) complex: W z^l
  FloatBuffer steps_;        // (N) float4: (Re z, Im z, Re W, Im W), the recurrence's coefficients
  FloatBuffer kernel_;       // (max_seq_len, C): K of the last forward
  FloatBuffer kernel_grad_;  // (max_seq_len, C): dK
  FloatBuffer state_;        // (max_batch, N, C) complex: the decoding state
  ActBuffer y_, du_;         // (max_batch * max_seq_len, C)
  const ActBuffer* u_ = nullptr;  // the last training forward's input; null after a decoding step
  std::size_t decode_next_ = 0;   // the position the decoding state continues at
};

}  // namespace paxocl::models
