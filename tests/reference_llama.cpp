#include "tests/reference_llama.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "models/tensor_names.h"
#include "tests/reference_common.h"

namespace paxocl::testing {
using namespace reference;  // Vec, require*, sz, add_into, Params, accumulate_grad

Vec rope_rotate(const Vec& heads, int B, int NH, int T, int hs, double base, int position_offset, bool inverse) {
  require_dims({B, NH, T, hs});
  require(hs % 2 == 0, "rope: hs must be even");
  require_size(heads, sz(B) * sz(NH) * sz(T) * sz(hs), "rope heads");
  const size_t half = sz(hs) / 2;
  Vec out(heads.size());
  for (size_t bh = 0; bh < sz(B) * sz(NH); ++bh) {
    for (size_t t = 0; t < sz(T); ++t) {
      const double* x = &heads[(bh * sz(T) + t) * sz(hs)];
      double* y = &out[(bh * sz(T) + t) * sz(hs)];
      for (size_t i = 0; i < half; ++i) {
        const double angle = static_cast<double>(t + sz(position_offset)) *
                             std::pow(base, -2.0 * static_cast<double>(i) / hs) * (inverse ? -1.0 : 1.0);
        const double c = std::cos(angle), s = std::sin(angle);
        y[i] = x[i] * c - x[i + half] * s;
        y[i + half] = x[i + half] * c + x[i] * s;
      }
    }
  }
  return out;
}

namespace {
// Heads (B, NH, T, hs) <-> the columns col0 .. col0 + NH*hs of a row layout (B*T, width).
template <typename Copy>
void for_each_head_element(int B, int T, int NH, int hs, size_t width, size_t col0, Copy copy) {
  for (size_t b = 0; b < sz(B); ++b) {
    for (size_t h = 0; h < sz(NH); ++h) {
      for (size_t t = 0; t < sz(T); ++t) {
        for (size_t e = 0; e < sz(hs); ++e) {
          copy((b * sz(T) + t) * width + col0 + h * sz(hs) + e, ((b * sz(NH) + h) * sz(T) + t) * sz(hs) + e);
        }
      }
    }
  }
}
Vec gather_heads(const Vec& rows, size_t width, size_t col0, int B, int T, int NH, int hs) {
  Vec heads(sz(B) * sz(NH) * sz(T) * sz(hs));
  for_each_head_element(B, T, NH, hs, width, col0, [&](size_t r, size_t q) { heads[q] = rows[r]; });
  return heads;
}
void scatter_heads(const Vec& heads, Vec& rows, size_t width, size_t col0, int B, int T, int NH, int hs) {
  require_size(heads, sz(B) * sz(NH) * sz(T) * sz(hs), "heads");
  for_each_head_element(B, T, NH, hs, width, col0, [&](size_t r, size_t q) { rows[r] = heads[q]; });
}
}  // namespace

QkvHeads split_qkv_grouped(const Vec& qkv, int B, int T, int H, int Hkv, int hs) {
  require_dims({B, T, H, Hkv, hs});
  const size_t width = sz(H + 2 * Hkv) * sz(hs);
  require_size(qkv, sz(B) * sz(T) * width, "qkv");
  return QkvHeads{gather_heads(qkv, width, 0, B, T, H, hs), gather_heads(qkv, width, sz(H) * sz(hs), B, T, Hkv, hs),
                  gather_heads(qkv, width, sz(H + Hkv) * sz(hs), B, T, Hkv, hs)};
}

Vec merge_qkv_grouped(const Vec& q, const Vec& k, const Vec& v, int B, int T, int H, int Hkv, int hs) {
  require_dims({B, T, H, Hkv, hs});
  const size_t width = sz(H + 2 * Hkv) * sz(hs);
  Vec qkv(sz(B) * sz(T) * width);
  scatter_heads(q, qkv, width, 0, B, T, H, hs);
  scatter_heads(k, qkv, width, sz(H) * sz(hs), B, T, Hkv, hs);
  scatter_heads(v, qkv, width, sz(H + Hkv) * sz(hs), B, T, Hkv, hs);
  return qkv;
}

Vec repeat_kv(const Vec& kv, int B, int Hkv, int H, int T, int hs) {
  require_dims({B, Hkv, H, T, hs});
  require(H % Hkv == 0, "repeat_kv: Hkv must divide H");
  require_size(kv, sz(B) * sz(Hkv) * sz(T) * sz(hs), "kv");
  const size_t group = sz(H / Hkv), block = sz(T) * sz(hs);
  Vec out(sz(B) * sz(H) * block);
  for (size_t b = 0; b < sz(B); ++b) {
    for (size_t h = 0; h < sz(H); ++h) {
      std::copy_n(kv.begin() + static_cast<std::ptrdiff_t>((b * sz(Hkv) + h / group) * block), block,
                  out.begin() + static_cast<std::ptrdiff_t>((b * sz(H) + h) * block));
    }
  }
  return out;
}

Vec sum_kv_groups(const Vec& dkv, int B, int Hkv, int H, int T, int hs) {
  require_dims({B, Hkv, H, T, hs});
  require(H % Hkv == 0, "sum_kv_groups: Hkv must divide H");
  require_size(dkv, sz(B) * sz(H) * sz(T) * sz(hs), "dkv");
  const size_t group = sz(H / Hkv), block = sz(T) * sz(hs);
  Vec out(sz(B) * sz(Hkv) * block, 0.0);
  for (size_t b = 0; b < sz(B); ++b) {
    for (size_t h = 0; h < sz(H); ++h) {
      for (size_t i = 0; i < block; ++i) out[(b * sz(Hkv) + h / group) * block + i] += dkv[(b * sz(H) + h) * block + i];
    }
  }
  return out;
}

namespace {

struct Dims {
  int B, T, N, C, F, H, Hkv, hs, V, Vp, L;
  double base, eps;
  int D() const { return H * hs; }
  int Q() const { return (H + 2 * Hkv) * hs; }
};

struct LayerWeights {
  Vec attn_norm, qkv_w, proj_w, mlp_norm, gate_up_w, down_w;
};

struct LayerActs {
  Vec x_in;  // (N, C)
  RmsNormResult n1;
  QkvHeads heads;   // rotated q (B, H, T, hs); rotated k, v (B, Hkv, T, hs)
  Vec k_rep, v_rep; // (B, H, T, hs)
  AttentionResult att;
  Vec o;      // (N, D)
  Vec x_mid;  // (N, C)
  RmsNormResult n2;
  Vec gu;     // (N, 2F)
  Vec h;      // (N, F)
};

ReferenceResult run_model(const models::LlamaConfig& config, const models::ParameterLayout& layout, const Vec& flat,
                          const ReferenceBatch& batch, bool backward) {
  namespace names = models::tensor_names::llama;
  const Dims d{batch.B, batch.T, batch.B * batch.T, config.model_dims, config.hidden_dims, config.num_heads,
               config.num_kv_heads, config.dims_per_head, config.vocab_size, config.padded_vocab(),
               config.num_layers, config.rope_base, config.norm_epsilon};
  require_dims({d.B, d.T, d.C, d.F, d.H, d.Hkv, d.hs, d.V, d.Vp, d.L});
  require(d.T <= config.max_seq_len, fmt::format("T={} exceeds MAX_SEQ_LEN={}", d.T, config.max_seq_len));
  const size_t N = sz(d.N);
  require(batch.ids.size() == N && batch.targets.size() == N && batch.weights.size() == N,
          "batch ids, targets and weights must each have B*T entries");
  for (int id : batch.ids) require(id >= 0 && id < d.V, fmt::format("token id {} is outside [0, {})", id, d.V));

  const Params p(layout, flat);
  const Vec embed = p.get(std::string(names::kTokenEmbedding), {d.Vp, d.C});
  const Vec head = p.get(std::string(names::kLmHead), {d.Vp, d.C});
  const Vec norm = p.get(std::string(names::kFinalNormScale), {d.C});
  auto layer_name = [](int l, std::string_view s) { return models::ParameterLayout::layer_name(l, s); };
  std::vector<LayerWeights> weights;
  for (int l = 0; l < d.L; ++l) {
    weights.push_back(LayerWeights{p.get(layer_name(l, names::kAttnNormScale), {d.C}),
                                   p.get(layer_name(l, names::kQkvWeight), {d.Q(), d.C}),
                                   p.get(layer_name(l, names::kAttnProjWeight), {d.C, d.D()}),
                                   p.get(layer_name(l, names::kMlpNormScale), {d.C}),
                                   p.get(layer_name(l, names::kGateUpWeight), {2 * d.F, d.C}),
                                   p.get(layer_name(l, names::kDownWeight), {d.C, d.F})});
  }

  // Forward.
  Vec x(N * sz(d.C));
  for (size_t n = 0; n < N; ++n) {
    std::copy_n(embed.begin() + static_cast<std::ptrdiff_t>(sz(batch.ids[n]) * sz(d.C)), d.C,
                x.begin() + static_cast<std::ptrdiff_t>(n * sz(d.C)));
  }
  std::vector<LayerActs> acts(sz(d.L));
  for (int l = 0; l < d.L; ++l) {
    const LayerWeights& w = weights[sz(l)];
    LayerActs& a = acts[sz(l)];
    a.x_in = x;
    a.n1 = rmsnorm_forward(x, w.attn_norm, d.N, d.C, d.eps);
    const Vec qkv = linear_forward(a.n1.out, w.qkv_w, {}, d.N, d.C, d.Q());
    a.heads = split_qkv_grouped(qkv, d.B, d.T, d.H, d.Hkv, d.hs);
    a.heads.q = rope_rotate(a.heads.q, d.B, d.H, d.T, d.hs, d.base);
    a.heads.k = rope_rotate(a.heads.k, d.B, d.Hkv, d.T, d.hs, d.base);
    a.k_rep = repeat_kv(a.heads.k, d.B, d.Hkv, d.H, d.T, d.hs);
    a.v_rep = repeat_kv(a.heads.v, d.B, d.Hkv, d.H, d.T, d.hs);
    a.att = attention_forward(a.heads.q, a.k_rep, a.v_rep, d.B, d.H, d.T, d.hs);
    a.o = merge_heads(a.att.out, d.B, d.T, d.H, d.hs);
    add_into(x, linear_forward(a.o, w.proj_w, {}, d.N, d.D(), d.C));
    a.x_mid = x;
    a.n2 = rmsnorm_forward(x, w.mlp_norm, d.N, d.C, d.eps);
    a.gu = linear_forward(a.n2.out, w.gate_up_w, {}, d.N, d.C, 2 * d.F);
    a.h = swiglu_forward(a.gu, d.N, d.F);
    add_into(x, linear_forward(a.h, w.down_w, {}, d.N, d.F, d.C));
  }
  const RmsNormResult nf = rmsnorm_forward(x, norm, d.N, d.C, d.eps);
  ReferenceResult result;
  result.logits = linear_forward(nf.out, head, {}, d.N, d.C, d.Vp);
  const Vec token_weights(batch.weights.begin(), batch.weights.end());
  const CrossEntropyResult ce = softmax_cross_entropy(result.logits, d.N, d.Vp, d.V, batch.targets, token_weights);
  result.loss = ce.loss;
  if (!backward) return result;

  // Backward.
  result.grads.assign(layout.total(), 0.0);
  const LinearGrads dhead = linear_backward(nf.out, head, ce.dlogits, d.N, d.C, d.Vp);
  accumulate_grad(result.grads, layout, std::string(names::kLmHead), dhead.dw);
  const RmsNormGrads dnf = rmsnorm_backward(dhead.dx, x, norm, nf.rstd, d.N, d.C);
  accumulate_grad(result.grads, layout, std::string(names::kFinalNormScale), dnf.dw);
  Vec dx = dnf.dx;
  for (int l = d.L - 1; l >= 0; --l) {
    const LayerWeights& w = weights[sz(l)];
    const LayerActs& a = acts[sz(l)];
    auto name = [&](std::string_view s) { return layer_name(l, s); };
    const LinearGrads ddown = linear_backward(a.h, w.down_w, dx, d.N, d.F, d.C);
    const Vec dgu = swiglu_backward(a.gu, ddown.dx, d.N, d.F);
    const LinearGrads dgate_up = linear_backward(a.n2.out, w.gate_up_w, dgu, d.N, d.C, 2 * d.F);
    const RmsNormGrads dn2 = rmsnorm_backward(dgate_up.dx, a.x_mid, w.mlp_norm, a.n2.rstd, d.N, d.C);
    add_into(dx, dn2.dx);
    accumulate_grad(result.grads, layout, name(names::kDownWeight), ddown.dw);
    accumulate_grad(result.grads, layout, name(names::kGateUpWeight), dgate_up.dw);
    accumulate_grad(result.grads, layout, name(names::kMlpNormScale), dn2.dw);

    const LinearGrads dproj = linear_backward(a.o, w.proj_w, dx, d.N, d.D(), d.C);
    const Vec dheads = split_heads(dproj.dx, d.B, d.T, d.H, d.hs);
    const AttentionGrads datt = attention_backward(a.heads.q, a.k_rep, a.v_rep, a.att.out, dheads, d.B, d.H, d.T, d.hs);
    const Vec dq = rope_rotate(datt.dq, d.B, d.H, d.T, d.hs, d.base, 0, /*inverse=*/true);
    const Vec dk = rope_rotate(sum_kv_groups(datt.dk, d.B, d.Hkv, d.H, d.T, d.hs), d.B, d.Hkv, d.T, d.hs, d.base, 0, true);
    const Vec dv = sum_kv_groups(datt.dv, d.B, d.Hkv, d.H, d.T, d.hs);
    const Vec dqkv = merge_qkv_grouped(dq, dk, dv, d.B, d.T, d.H, d.Hkv, d.hs);
    const LinearGrads dqkv_lin = linear_backward(a.n1.out, w.qkv_w, dqkv, d.N, d.C, d.Q());
    const RmsNormGrads dn1 = rmsnorm_backward(dqkv_lin.dx, a.x_in, w.attn_norm, a.n1.rstd, d.N, d.C);
    add_into(dx, dn1.dx);
    accumulate_grad(result.grads, layout, name(names::kAttnProjWeight), dproj.dw);
    accumulate_grad(result.grads, layout, name(names::kQkvWeight), dqkv_lin.dw);
    accumulate_grad(result.grads, layout, name(names::kAttnNormScale), dn1.dw);
  }
  Vec dembed(embed.size(), 0.0);
  for (size_t n = 0; n < N; ++n) {
    for (size_t c = 0; c < sz(d.C); ++c) dembed[sz(batch.ids[n]) * sz(d.C) + c] += dx[n * sz(d.C) + c];
  }
  accumulate_grad(result.grads, layout, std::string(names::kTokenEmbedding), dembed);
  return result;
}

}  // namespace

ReferenceResult reference_forward_backward(const models::LlamaConfig& config, const models::ParameterLayout& layout,
                                           const std::vector<float>& params, const ReferenceBatch& batch) {
  return run_model(config, layout, Vec(params.begin(), params.end()), batch, /*backward=*/true);
}

double reference_loss(const models::LlamaConfig& config, const models::ParameterLayout& layout,
                      const std::vector<double>& params, const ReferenceBatch& batch) {
  return run_model(config, layout, params, batch, /*backward=*/false).loss;
}

}  // namespace paxocl::testing
