#include "tests/reference_gpt.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "tests/reference_common.h"
#include "tests/reference_ssm.h"

namespace paxocl::testing {
using namespace reference;  // Vec, require*, sz, add_into, Params, accumulate_grad

// ---------------------------------------------------------------------------------------------
// Linear

Vec linear_forward(const Vec& x, const Vec& w, const Vec& b, int N, int in, int out) {
  require_dims({N, in, out});
  require_size(x, sz(N) * sz(in), "linear x");
  require_size(w, sz(out) * sz(in), "linear W");
  require(b.empty() || b.size() == sz(out), "linear b must be empty or (out)");
  Vec y(sz(N) * sz(out));
  for (size_t n = 0; n < sz(N); ++n) {
    for (size_t o = 0; o < sz(out); ++o) {
      double acc = b.empty() ? 0.0 : b[o];
      for (size_t i = 0; i < sz(in); ++i) acc += x[n * sz(in) + i] * w[o * sz(in) + i];
      y[n * sz(out) + o] = acc;
    }
  }
  return y;
}

LinearGrads linear_backward(const Vec& x, const Vec& w, const Vec& dy, int N, int in, int out) {
  require_dims({N, in, out});
  require_size(x, sz(N) * sz(in), "linear x");
  require_size(w, sz(out) * sz(in), "linear W");
  require_size(dy, sz(N) * sz(out), "linear dy");
  LinearGrads g{Vec(sz(N) * sz(in)), Vec(sz(out) * sz(in)), Vec(sz(out))};
  for (size_t n = 0; n < sz(N); ++n) {
    for (size_t o = 0; o < sz(out); ++o) {
      const double d = dy[n * sz(out) + o];
      g.db[o] += d;
      for (size_t i = 0; i < sz(in); ++i) {
        g.dx[n * sz(in) + i] += d * w[o * sz(in) + i];
        g.dw[o * sz(in) + i] += d * x[n * sz(in) + i];
      }
    }
  }
  return g;
}

// ---------------------------------------------------------------------------------------------
// LayerNorm

LayerNormResult layernorm_forward(const Vec& x, const Vec& w, const Vec& b, int N, int C, double eps) {
  require_dims({N, C});
  require_size(x, sz(N) * sz(C), "layernorm x");
  require_size(w, sz(C), "layernorm w");
  require_size(b, sz(C), "layernorm b");
  LayerNormResult r{Vec(sz(N) * sz(C)), Vec(sz(N)), Vec(sz(N))};
  for (size_t n = 0; n < sz(N); ++n) {
    const double* row = &x[n * sz(C)];
    double mean = 0.0;
    for (size_t c = 0; c < sz(C); ++c) mean += row[c];
    mean /= C;
    double var = 0.0;
    for (size_t c = 0; c < sz(C); ++c) var += (row[c] - mean) * (row[c] - mean);
    var /= C;  // biased
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (size_t c = 0; c < sz(C); ++c) r.out[n * sz(C) + c] = (row[c] - mean) * rstd * w[c] + b[c];
    r.mean[n] = mean;
    r.rstd[n] = rstd;
  }
  return r;
}

LayerNormGrads layernorm_backward(const Vec& dout, const Vec& x, const Vec& w, const Vec& mean, const Vec& rstd, int N,
                                  int C) {
  require_dims({N, C});
  require_size(dout, sz(N) * sz(C), "layernorm dout");
  require_size(x, sz(N) * sz(C), "layernorm x");
  require_size(w, sz(C), "layernorm w");
  require_size(mean, sz(N), "layernorm mean");
  require_size(rstd, sz(N), "layernorm rstd");
  LayerNormGrads g{Vec(sz(N) * sz(C)), Vec(sz(C)), Vec(sz(C))};
  for (size_t n = 0; n < sz(N); ++n) {
    // xhat = (x - mean) * rstd; out = xhat * w + b. With dxhat = dout * w:
    //   dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)).
    Vec xhat(sz(C)), dxhat(sz(C));
    double mean_dxhat = 0.0, mean_dxhat_xhat = 0.0;
    for (size_t c = 0; c < sz(C); ++c) {
      const size_t i = n * sz(C) + c;
      xhat[c] = (x[i] - mean[n]) * rstd[n];
      dxhat[c] = dout[i] * w[c];
      mean_dxhat += dxhat[c];
      mean_dxhat_xhat += dxhat[c] * xhat[c];
      g.dw[c] += dout[i] * xhat[c];
      g.db[c] += dout[i];
    }
    mean_dxhat /= C;
    mean_dxhat_xhat /= C;
    for (size_t c = 0; c < sz(C); ++c) {
      g.dx[n * sz(C) + c] = rstd[n] * (dxhat[c] - mean_dxhat - xhat[c] * mean_dxhat_xhat);
    }
  }
  return g;
}

// ---------------------------------------------------------------------------------------------
// RMSNorm

RmsNormResult rmsnorm_forward(const Vec& x, const Vec& w, int N, int C, double eps) {
  require_dims({N, C});
  require_size(x, sz(N) * sz(C), "rmsnorm x");
  require_size(w, sz(C), "rmsnorm w");
  RmsNormResult r{Vec(sz(N) * sz(C)), Vec(sz(N))};
  for (size_t n = 0; n < sz(N); ++n) {
    double sum_sq = 0.0;
    for (size_t c = 0; c < sz(C); ++c) sum_sq += x[n * sz(C) + c] * x[n * sz(C) + c];
    r.rstd[n] = 1.0 / std::sqrt(sum_sq / C + eps);
    for (size_t c = 0; c < sz(C); ++c) r.out[n * sz(C) + c] = x[n * sz(C) + c] * r.rstd[n] * w[c];
  }
  return r;
}

RmsNormGrads rmsnorm_backward(const Vec& dout, const Vec& x, const Vec& w, const Vec& rstd, int N, int C) {
  require_dims({N, C});
  require_size(dout, sz(N) * sz(C), "rmsnorm dout");
  require_size(x, sz(N) * sz(C), "rmsnorm x");
  require_size(w, sz(C), "rmsnorm w");
  require_size(rstd, sz(N), "rmsnorm rstd");
  RmsNormGrads g{Vec(sz(N) * sz(C)), Vec(sz(C))};
  for (size_t n = 0; n < sz(N); ++n) {
    // xhat = x * rstd, d rstd / d x_j = -rstd^3 x_j / C; with dxhat = dout * w:
    //   dx = rstd * (dxhat - xhat * mean(dxhat * xhat)).
    double mean_dxhat_xhat = 0.0;
    for (size_t c = 0; c < sz(C); ++c) {
      const size_t i = n * sz(C) + c;
      mean_dxhat_xhat += dout[i] * w[c] * x[i] * rstd[n];
      g.dw[c] += dout[i] * x[i] * rstd[n];
    }
    mean_dxhat_xhat /= C;
    for (size_t c = 0; c < sz(C); ++c) {
      const size_t i = n * sz(C) + c;
      g.dx[i] = rstd[n] * (dout[i] * w[c] - x[i] * rstd[n] * mean_dxhat_xhat);
    }
  }
  return g;
}

// ---------------------------------------------------------------------------------------------
// SwiGLU

namespace {
double sigmoid(double g) { return 1.0 / (1.0 + std::exp(-g)); }  // exp(+-100) is finite in double
}  // namespace

Vec swiglu_forward(const Vec& gu, int N, int F) {
  require_dims({N, F});
  require_size(gu, sz(N) * 2 * sz(F), "swiglu gu");
  Vec h(sz(N) * sz(F));
  for (size_t n = 0; n < sz(N); ++n) {
    for (size_t f = 0; f < sz(F); ++f) {
      const double g = gu[n * 2 * sz(F) + f], u = gu[n * 2 * sz(F) + sz(F) + f];
      h[n * sz(F) + f] = g * sigmoid(g) * u;
    }
  }
  return h;
}

Vec swiglu_backward(const Vec& gu, const Vec& dh, int N, int F) {
  require_dims({N, F});
  require_size(gu, sz(N) * 2 * sz(F), "swiglu gu");
  require_size(dh, sz(N) * sz(F), "swiglu dh");
  Vec dgu(sz(N) * 2 * sz(F));
  for (size_t n = 0; n < sz(N); ++n) {
    for (size_t f = 0; f < sz(F); ++f) {
      const size_t gate = n * 2 * sz(F) + f, up = gate + sz(F);
      const double g = gu[gate], s = sigmoid(g), d = dh[n * sz(F) + f];
      dgu[gate] = d * gu[up] * s * (1.0 + g * (1.0 - s));  // silu'(g) = s + g s (1 - s)
      dgu[up] = d * g * s;
    }
  }
  return dgu;
}

// ---------------------------------------------------------------------------------------------
// GELU (tanh approximation)

namespace {
const double kGeluK = std::sqrt(2.0 / std::numbers::pi);
constexpr double kGeluA = 0.044715;
}  // namespace

Vec gelu_forward(const Vec& x) {
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double f = x[i];
    y[i] = 0.5 * f * (1.0 + std::tanh(kGeluK * (f + kGeluA * f * f * f)));
  }
  return y;
}

Vec gelu_backward(const Vec& x, const Vec& dout) {
  require_size(dout, x.size(), "gelu dout");
  Vec dx(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double f = x[i];
    const double th = std::tanh(kGeluK * (f + kGeluA * f * f * f));
    const double du = kGeluK * (1.0 + 3.0 * kGeluA * f * f);  // d/df of the tanh argument
    const double dgelu = 0.5 * (1.0 + th) + 0.5 * f * (1.0 - th * th) * du;
    dx[i] = dout[i] * dgelu;
  }
  return dx;
}

// ---------------------------------------------------------------------------------------------
// Causal attention

namespace {

// Scores of query row t against keys u <= t, and their softmax; q, k point at one (T, hs) head.
void causal_probs(const double* q, const double* k, int t, int hs, double scale, Vec& p, double& lse) {
  p.assign(sz(t) + 1, 0.0);
  double mx = -std::numeric_limits<double>::infinity();
  for (size_t u = 0; u <= sz(t); ++u) {
    double s = 0.0;
    for (size_t i = 0; i < sz(hs); ++i) s += q[sz(t) * sz(hs) + i] * k[u * sz(hs) + i];
    p[u] = s * scale;
    mx = std::max(mx, p[u]);
  }
  double sum = 0.0;
  for (size_t u = 0; u <= sz(t); ++u) sum += std::exp(p[u] - mx);
  lse = mx + std::log(sum);
  for (size_t u = 0; u <= sz(t); ++u) p[u] = std::exp(p[u] - lse);
}

}  // namespace

AttentionResult attention_forward(const Vec& q, const Vec& k, const Vec& v, int B, int NH, int T, int hs) {
  require_dims({B, NH, T, hs});
  const size_t n = sz(B) * sz(NH) * sz(T) * sz(hs);
  require_size(q, n, "attention q");
  require_size(k, n, "attention k");
  require_size(v, n, "attention v");
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  AttentionResult r{Vec(n), Vec(sz(B) * sz(NH) * sz(T))};
  Vec p;
  for (size_t bh = 0; bh < sz(B) * sz(NH); ++bh) {
    const size_t base = bh * sz(T) * sz(hs);
    for (int t = 0; t < T; ++t) {
      double lse = 0.0;
      causal_probs(&q[base], &k[base], t, hs, scale, p, lse);
      r.lse[bh * sz(T) + sz(t)] = lse;
      for (size_t u = 0; u <= sz(t); ++u) {
        for (size_t i = 0; i < sz(hs); ++i) r.out[base + sz(t) * sz(hs) + i] += p[u] * v[base + u * sz(hs) + i];
      }
    }
  }
  return r;
}

AttentionGrads attention_backward(const Vec& q, const Vec& k, const Vec& v, const Vec& out, const Vec& dout, int B,
                                  int NH, int T, int hs) {
  require_dims({B, NH, T, hs});
  const size_t n = sz(B) * sz(NH) * sz(T) * sz(hs);
  require_size(q, n, "attention q");
  require_size(k, n, "attention k");
  require_size(v, n, "attention v");
  require_size(out, n, "attention out");
  require_size(dout, n, "attention dout");
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  AttentionGrads g{Vec(n), Vec(n), Vec(n)};
  Vec p;
  for (size_t bh = 0; bh < sz(B) * sz(NH); ++bh) {
    const size_t base = bh * sz(T) * sz(hs);
    for (int t = 0; t < T; ++t) {
      double lse = 0.0;
      causal_probs(&q[base], &k[base], t, hs, scale, p, lse);
      const size_t row = base + sz(t) * sz(hs);
      // out_t = sum_u p_u v_u:  dv_u += p_u dout_t,  dp_u = dout_t · v_u.
      // Softmax: ds_u = p_u (dp_u - sum_w p_w dp_w), and sum_w p_w dp_w = dout_t · out_t.
      double row_term = 0.0;
      for (size_t i = 0; i < sz(hs); ++i) row_term += dout[row + i] * out[row + i];
      for (size_t u = 0; u <= sz(t); ++u) {
        const size_t key = base + u * sz(hs);
        double dp = 0.0;
        for (size_t i = 0; i < sz(hs); ++i) {
          dp += dout[row + i] * v[key + i];
          g.dv[key + i] += p[u] * dout[row + i];
        }
        const double ds = p[u] * (dp - row_term) * scale;  // s = scale * q_t · k_u
        for (size_t i = 0; i < sz(hs); ++i) {
          g.dq[row + i] += ds * k[key + i];
          g.dk[key + i] += ds * q[row + i];
        }
      }
    }
  }
  return g;
}

QkvHeads split_qkv(const Vec& qkv, int B, int T, int NH, int hs) {
  require_dims({B, T, NH, hs});
  const size_t D = sz(NH) * sz(hs), n = sz(B) * sz(T) * D;
  require_size(qkv, 3 * n, "qkv");
  QkvHeads h{Vec(n), Vec(n), Vec(n)};
  Vec* parts[3] = {&h.q, &h.k, &h.v};
  for (size_t b = 0; b < sz(B); ++b)
    for (size_t t = 0; t < sz(T); ++t)
      for (size_t part = 0; part < 3; ++part)
        for (size_t head = 0; head < sz(NH); ++head)
          for (size_t i = 0; i < sz(hs); ++i)
            (*parts[part])[((b * sz(NH) + head) * sz(T) + t) * sz(hs) + i] =
                qkv[(b * sz(T) + t) * 3 * D + part * D + head * sz(hs) + i];
  return h;
}

Vec merge_qkv(const Vec& q, const Vec& k, const Vec& v, int B, int T, int NH, int hs) {
  require_dims({B, T, NH, hs});
  const size_t D = sz(NH) * sz(hs), n = sz(B) * sz(T) * D;
  require_size(q, n, "q");
  require_size(k, n, "k");
  require_size(v, n, "v");
  Vec qkv(3 * n);
  const Vec* parts[3] = {&q, &k, &v};
  for (size_t b = 0; b < sz(B); ++b)
    for (size_t t = 0; t < sz(T); ++t)
      for (size_t part = 0; part < 3; ++part)
        for (size_t head = 0; head < sz(NH); ++head)
          for (size_t i = 0; i < sz(hs); ++i)
            qkv[(b * sz(T) + t) * 3 * D + part * D + head * sz(hs) + i] =
                (*parts[part])[((b * sz(NH) + head) * sz(T) + t) * sz(hs) + i];
  return qkv;
}

Vec merge_heads(const Vec& heads, int B, int T, int NH, int hs) {
  require_dims({B, T, NH, hs});
  const size_t D = sz(NH) * sz(hs);
  require_size(heads, sz(B) * sz(T) * D, "heads");
  Vec merged(heads.size());
  for (size_t b = 0; b < sz(B); ++b)
    for (size_t head = 0; head < sz(NH); ++head)
      for (size_t t = 0; t < sz(T); ++t)
        for (size_t i = 0; i < sz(hs); ++i)
          merged[(b * sz(T) + t) * D + head * sz(hs) + i] = heads[((b * sz(NH) + head) * sz(T) + t) * sz(hs) + i];
  return merged;
}

Vec split_heads(const Vec& merged, int B, int T, int NH, int hs) {
  require_dims({B, T, NH, hs});
  const size_t D = sz(NH) * sz(hs);
  require_size(merged, sz(B) * sz(T) * D, "merged heads");
  Vec heads(merged.size());
  for (size_t b = 0; b < sz(B); ++b)
    for (size_t head = 0; head < sz(NH); ++head)
      for (size_t t = 0; t < sz(T); ++t)
        for (size_t i = 0; i < sz(hs); ++i)
          heads[((b * sz(NH) + head) * sz(T) + t) * sz(hs) + i] = merged[(b * sz(T) + t) * D + head * sz(hs) + i];
  return heads;
}

// ---------------------------------------------------------------------------------------------
// Softmax cross-entropy

CrossEntropyResult softmax_cross_entropy(const Vec& logits, int N, int Vp, int V, const std::vector<int>& targets,
                                         const Vec& weights) {
  require_dims({N, Vp, V});
  require(V <= Vp, fmt::format("V={} exceeds Vp={}", V, Vp));
  require_size(logits, sz(N) * sz(Vp), "cross-entropy logits");
  require(targets.size() == sz(N), "cross-entropy targets must be (N)");
  require_size(weights, sz(N), "cross-entropy weights");
  double wsum = 0.0;
  for (size_t n = 0; n < sz(N); ++n) {
    require(std::isfinite(weights[n]) && weights[n] >= 0.0, fmt::format("weight {} of row {} is not >= 0", weights[n], n));
    if (weights[n] > 0.0) {
      require(targets[n] >= 0 && targets[n] < V, fmt::format("target {} of row {} is outside [0, {})", targets[n], n, V));
    }
    wsum += weights[n];
  }
  CrossEntropyResult r;
  r.dlogits.assign(sz(N) * sz(Vp), 0.0);
  r.probs.assign(sz(N) * sz(Vp), 0.0);
  r.row_ce.assign(sz(N), 0.0);
  for (size_t n = 0; n < sz(N); ++n) {
    const double* row = &logits[n * sz(Vp)];
    double mx = -std::numeric_limits<double>::infinity();
    for (size_t j = 0; j < sz(V); ++j) mx = std::max(mx, row[j]);
    double sum = 0.0;
    for (size_t j = 0; j < sz(V); ++j) sum += std::exp(row[j] - mx);
    const double lse = mx + std::log(sum);
    for (size_t j = 0; j < sz(V); ++j) r.probs[n * sz(Vp) + j] = std::exp(row[j] - lse);
    if (weights[n] == 0.0) continue;
    const size_t target = sz(targets[n]);
    r.row_ce[n] = lse - row[target];
    r.loss += weights[n] * r.row_ce[n];
    // d/dlogit_j of ce = p_j - [j == target], scaled by w_n / sum w.
    const double scale = weights[n] / wsum;
    for (size_t j = 0; j < sz(V); ++j) {
      r.dlogits[n * sz(Vp) + j] = scale * (r.probs[n * sz(Vp) + j] - (j == target ? 1.0 : 0.0));
    }
  }
  r.loss = wsum > 0.0 ? r.loss / wsum : 0.0;
  return r;
}

// ---------------------------------------------------------------------------------------------
// Embeddings

Vec embedding_forward(const std::vector<int>& ids, int B, int T, const Vec& wte, const Vec& wpe, int Vp, int maxT,
                      int C) {
  require_dims({B, T, Vp, maxT, C});
  require(T <= maxT, fmt::format("T={} exceeds the {} position embeddings", T, maxT));
  require(ids.size() == sz(B) * sz(T), "embedding ids must be (B, T)");
  require_size(wte, sz(Vp) * sz(C), "wte");
  require_size(wpe, sz(maxT) * sz(C), "wpe");
  Vec out(sz(B) * sz(T) * sz(C));
  for (size_t b = 0; b < sz(B); ++b) {
    for (size_t t = 0; t < sz(T); ++t) {
      const int id = ids[b * sz(T) + t];
      require(id >= 0 && id < Vp, fmt::format("token id {} is outside [0, {})", id, Vp));
      for (size_t c = 0; c < sz(C); ++c) {
        out[(b * sz(T) + t) * sz(C) + c] = wte[sz(id) * sz(C) + c] + wpe[t * sz(C) + c];
      }
    }
  }
  return out;
}

EmbeddingGrads embedding_backward(const std::vector<int>& ids, int B, int T, const Vec& dout, int Vp, int maxT,
                                  int C) {
  require_dims({B, T, Vp, maxT, C});
  require(T <= maxT, fmt::format("T={} exceeds the {} position embeddings", T, maxT));
  require(ids.size() == sz(B) * sz(T), "embedding ids must be (B, T)");
  require_size(dout, sz(B) * sz(T) * sz(C), "embedding dout");
  EmbeddingGrads g{Vec(sz(Vp) * sz(C)), Vec(sz(maxT) * sz(C))};
  for (size_t b = 0; b < sz(B); ++b) {
    for (size_t t = 0; t < sz(T); ++t) {
      const int id = ids[b * sz(T) + t];
      require(id >= 0 && id < Vp, fmt::format("token id {} is outside [0, {})", id, Vp));
      for (size_t c = 0; c < sz(C); ++c) {
        const double d = dout[(b * sz(T) + t) * sz(C) + c];
        g.dwte[sz(id) * sz(C) + c] += d;
        g.dwpe[t * sz(C) + c] += d;
      }
    }
  }
  return g;
}

// ---------------------------------------------------------------------------------------------
// The full model

namespace {

struct Dims {
  int B, T, N, C, D, H, NH, hs, V, Vp, maxT, L;
};

struct LayerWeights {
  bool ssm = false;  // the mixer: the S4D SSM (ssm_*) instead of attention (qkv_*, proj_*)
  Vec ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, mproj_w, mproj_b;
  Vec ssm_c_re, ssm_c_im, ssm_d;  // (N, C), (N, C), (C)
};

LayerWeights layer_weights(const Params& p, const Dims& d, const models::GptConfig& config, int l) {
  using models::ParameterLayout;
  auto n = [l](const char* suffix) { return ParameterLayout::layer_name(l, suffix); };
  LayerWeights w;
  w.ln1_w = p.get(n("ln1.scale"), {d.C});
  w.ln1_b = p.get(n("ln1.bias"), {d.C});
  if (config.block_kind(l) == models::BlockKind::kSsm) {
    const int N = config.ssm.state_size;
    w.ssm = true;
    w.ssm_c_re = p.get(n("ssm.c_re"), {N, d.C});
    w.ssm_c_im = p.get(n("ssm.c_im"), {N, d.C});
    w.ssm_d = p.get(n("ssm.d"), {d.C});
  } else {
    w.qkv_w = p.get(n("attn.qkv.w"), {3 * d.D, d.C});
    w.qkv_b = p.get(n("attn.qkv.b"), {3 * d.D});
    w.proj_w = p.get(n("attn.proj.w"), {d.C, d.D});
    w.proj_b = p.get(n("attn.proj.b"), {d.C});
  }
  w.ln2_w = p.get(n("ln2.scale"), {d.C});
  w.ln2_b = p.get(n("ln2.bias"), {d.C});
  w.fc_w = p.get(n("mlp.fc.w"), {d.H, d.C});
  w.fc_b = p.get(n("mlp.fc.b"), {d.H});
  w.mproj_w = p.get(n("mlp.proj.w"), {d.C, d.H});
  w.mproj_b = p.get(n("mlp.proj.b"), {d.C});
  return w;
}

// What one layer's forward keeps for its backward.
struct LayerActs {
  Vec x_in;          // (N, C) the residual stream entering the layer
  LayerNormResult ln1;
  QkvHeads heads;    // q, k, v (B, NH, T, hs)
  AttentionResult att;
  Vec o;             // (N, D) the heads' output, concatenated
  Vec x_mid;         // (N, C) after the attention residual
  LayerNormResult ln2;
  Vec f;             // (N, H) fc pre-activation
  Vec g;             // (N, H) GELU(f)
};

ReferenceResult run_model(const models::GptConfig& config, const models::ParameterLayout& layout, const Vec& flat,
                          const ReferenceBatch& batch, bool backward) {
  const Dims d{batch.B,
               batch.T,
               batch.B * batch.T,
               config.model_dims,
               config.attention_dims(),
               config.hidden_dims,
               config.num_heads,
               config.dims_per_head,
               config.vocab_size,
               config.padded_vocab(),
               config.max_seq_len,
               config.num_layers};
  require_dims({d.B, d.T, d.C, d.NH, d.hs, d.H, d.V, d.Vp, d.maxT, d.L});
  require(d.V <= d.Vp, "VOCAB_SIZE exceeds the padded vocabulary");
  require(d.T <= d.maxT, fmt::format("T={} exceeds MAX_SEQ_LEN={}", d.T, d.maxT));
  const size_t N = sz(d.N);
  require(batch.ids.size() == N && batch.targets.size() == N && batch.weights.size() == N,
          "batch ids, targets and weights must each have B*T entries");
  for (int id : batch.ids) require(id >= 0 && id < d.V, fmt::format("token id {} is outside [0, {})", id, d.V));

  const Params p(layout, flat);
  const Vec wte = p.get("wte", {d.Vp, d.C});
  const Vec wpe = p.get("wpe", {d.maxT, d.C});
  std::vector<LayerWeights> weights;
  for (int l = 0; l < d.L; ++l) weights.push_back(layer_weights(p, d, config, l));
  const Vec lnf_w = p.get("lnf.scale", {d.C}), lnf_b = p.get("lnf.bias", {d.C});

  // Forward.
  Vec x = embedding_forward(batch.ids, d.B, d.T, wte, wpe, d.Vp, d.maxT, d.C);
  std::vector<LayerActs> acts(sz(d.L));
  for (int l = 0; l < d.L; ++l) {
    const LayerWeights& w = weights[sz(l)];
    LayerActs& a = acts[sz(l)];
    a.x_in = x;
    a.ln1 = layernorm_forward(x, w.ln1_w, w.ln1_b, d.N, d.C);
    if (w.ssm) {
      add_into(x, ssm_forward(config.ssm, a.ln1.out, w.ssm_c_re, w.ssm_c_im, w.ssm_d, d.B, d.T, d.C));
    } else {
      const Vec qkv = linear_forward(a.ln1.out, w.qkv_w, w.qkv_b, d.N, d.C, 3 * d.D);
      a.heads = split_qkv(qkv, d.B, d.T, d.NH, d.hs);
      a.att = attention_forward(a.heads.q, a.heads.k, a.heads.v, d.B, d.NH, d.T, d.hs);
    a.o = merge_heads(a.att.out, d.B, d.T, d.NH, d.hs);
      add_into(x, linear_forward(a.o, w.proj_w, w.proj_b, d.N, d.D, d.C));
    }
    a.x_mid = x;
    a.ln2 = layernorm_forward(x, w.ln2_w, w.ln2_b, d.N, d.C);
    a.f = linear_forward(a.ln2.out, w.fc_w, w.fc_b, d.N, d.C, d.H);
    a.g = gelu_forward(a.f);
    add_into(x, linear_forward(a.g, w.mproj_w, w.mproj_b, d.N, d.H, d.C));
  }
  const LayerNormResult lnf = layernorm_forward(x, lnf_w, lnf_b, d.N, d.C);
  ReferenceResult result;
  result.logits = linear_forward(lnf.out, wte, {}, d.N, d.C, d.Vp);  // tied LM head, no bias
  const Vec token_weights(batch.weights.begin(), batch.weights.end());
  const CrossEntropyResult ce = softmax_cross_entropy(result.logits, d.N, d.Vp, d.V, batch.targets, token_weights);
  result.loss = ce.loss;
  if (!backward) return result;

  // Backward.
  result.grads.assign(layout.total(), 0.0);
  Vec dwte(wte.size(), 0.0);
  const LinearGrads head = linear_backward(lnf.out, wte, ce.dlogits, d.N, d.C, d.Vp);
  add_into(dwte, head.dw);
  const LayerNormGrads dlnf = layernorm_backward(head.dx, x, lnf_w, lnf.mean, lnf.rstd, d.N, d.C);
  accumulate_grad(result.grads, layout, "lnf.scale", dlnf.dw);
  accumulate_grad(result.grads, layout, "lnf.bias", dlnf.db);
  Vec dx = dlnf.dx;  // d loss / d residual stream
  for (int l = d.L - 1; l >= 0; --l) {
    const LayerWeights& w = weights[sz(l)];
    const LayerActs& a = acts[sz(l)];
    auto name = [l](const char* suffix) { return models::ParameterLayout::layer_name(l, suffix); };
    // x_out = x_mid + mproj(GELU(fc(LN2(x_mid)))).
    const LinearGrads dmproj = linear_backward(a.g, w.mproj_w, dx, d.N, d.H, d.C);
    const Vec df = gelu_backward(a.f, dmproj.dx);
    const LinearGrads dfc = linear_backward(a.ln2.out, w.fc_w, df, d.N, d.C, d.H);
    const LayerNormGrads dln2 = layernorm_backward(dfc.dx, a.x_mid, w.ln2_w, a.ln2.mean, a.ln2.rstd, d.N, d.C);
    add_into(dx, dln2.dx);
    accumulate_grad(result.grads, layout, name("mlp.proj.w"), dmproj.dw);
    accumulate_grad(result.grads, layout, name("mlp.proj.b"), dmproj.db);
    accumulate_grad(result.grads, layout, name("mlp.fc.w"), dfc.dw);
    accumulate_grad(result.grads, layout, name("mlp.fc.b"), dfc.db);
    accumulate_grad(result.grads, layout, name("ln2.scale"), dln2.dw);
    accumulate_grad(result.grads, layout, name("ln2.bias"), dln2.db);
    if (w.ssm) {  // x_mid = x_in + SSM(LN1(x_in))
      const SsmGrads dssm = ssm_backward(config.ssm, a.ln1.out, dx, w.ssm_c_re, w.ssm_c_im, w.ssm_d, d.B, d.T, d.C);
      const LayerNormGrads dln1 = layernorm_backward(dssm.du, a.x_in, w.ln1_w, a.ln1.mean, a.ln1.rstd, d.N, d.C);
      add_into(dx, dln1.dx);
      accumulate_grad(result.grads, layout, name("ssm.c_re"), dssm.dc_re);
      accumulate_grad(result.grads, layout, name("ssm.c_im"), dssm.dc_im);
      accumulate_grad(result.grads, layout, name("ssm.d"), dssm.dd);
      accumulate_grad(result.grads, layout, name("ln1.scale"), dln1.dw);
      accumulate_grad(result.grads, layout, name("ln1.bias"), dln1.db);
      continue;
    }
    // x_mid = x_in + proj(attention(split(qkv(LN1(x_in))))).
    const LinearGrads dproj = linear_backward(a.o, w.proj_w, dx, d.N, d.D, d.C);
    const Vec dheads = split_heads(dproj.dx, d.B, d.T, d.NH, d.hs);
    const AttentionGrads datt =
        attention_backward(a.heads.q, a.heads.k, a.heads.v, a.att.out, dheads, d.B, d.NH, d.T, d.hs);
    const Vec dqkv = merge_qkv(datt.dq, datt.dk, datt.dv, d.B, d.T, d.NH, d.hs);
    const LinearGrads dqkv_lin = linear_backward(a.ln1.out, w.qkv_w, dqkv, d.N, d.C, 3 * d.D);
    const LayerNormGrads dln1 = layernorm_backward(dqkv_lin.dx, a.x_in, w.ln1_w, a.ln1.mean, a.ln1.rstd, d.N, d.C);
    add_into(dx, dln1.dx);
    accumulate_grad(result.grads, layout, name("attn.proj.w"), dproj.dw);
    accumulate_grad(result.grads, layout, name("attn.proj.b"), dproj.db);
    accumulate_grad(result.grads, layout, name("attn.qkv.w"), dqkv_lin.dw);
    accumulate_grad(result.grads, layout, name("attn.qkv.b"), dqkv_lin.db);
    accumulate_grad(result.grads, layout, name("ln1.scale"), dln1.dw);
    accumulate_grad(result.grads, layout, name("ln1.bias"), dln1.db);
  }
  const EmbeddingGrads demb = embedding_backward(batch.ids, d.B, d.T, dx, d.Vp, d.maxT, d.C);
  add_into(dwte, demb.dwte);  // the tied wte gets both the LM head's and the embedding's gradient
  accumulate_grad(result.grads, layout, "wte", dwte);
  accumulate_grad(result.grads, layout, "wpe", demb.dwpe);
  return result;
}

}  // namespace

ReferenceResult reference_forward_backward(const models::GptConfig& config, const models::ParameterLayout& layout,
                                           const std::vector<float>& params, const ReferenceBatch& batch) {
  const Vec flat(params.begin(), params.end());
  return run_model(config, layout, flat, batch, /*backward=*/true);
}

double reference_loss(const models::GptConfig& config, const models::ParameterLayout& layout,
                      const std::vector<double>& params, const ReferenceBatch& batch) {
  return run_model(config, layout, params, batch, /*backward=*/false).loss;
}

QkvHeads split_grouped_qkv(const std::vector<double>& qkv, int B, int T, int H, int Hkv, int hs) {
  const std::size_t g = static_cast<std::size_t>(H / Hkv), W = static_cast<std::size_t>((H + 2 * Hkv) * hs),
                    n = static_cast<std::size_t>(B * H * T * hs), D = static_cast<std::size_t>(H * hs);
  QkvHeads heads{std::vector<double>(n), std::vector<double>(n), std::vector<double>(n)};
  for (std::size_t b = 0; b < static_cast<std::size_t>(B); ++b)
    for (std::size_t h = 0; h < static_cast<std::size_t>(H); ++h)
      for (std::size_t t = 0; t < static_cast<std::size_t>(T); ++t)
        for (std::size_t i = 0; i < static_cast<std::size_t>(hs); ++i) {
          const std::size_t at = ((b * H + h) * T + t) * hs + i, row = (b * T + t) * W, kv = (h / g) * hs + i;
          heads.q[at] = qkv[row + h * hs + i];
          heads.k[at] = qkv[row + D + kv];
          heads.v[at] = qkv[row + D + Hkv * hs + kv];
        }
  return heads;
}

std::vector<double> merge_grouped_qkv(const AttentionGrads& d, int B, int T, int H, int Hkv, int hs) {
  const std::size_t g = static_cast<std::size_t>(H / Hkv), W = static_cast<std::size_t>((H + 2 * Hkv) * hs),
                    D = static_cast<std::size_t>(H * hs);
  std::vector<double> dqkv(static_cast<std::size_t>(B * T) * W, 0.0);
  for (std::size_t b = 0; b < static_cast<std::size_t>(B); ++b)
    for (std::size_t h = 0; h < static_cast<std::size_t>(H); ++h)
      for (std::size_t t = 0; t < static_cast<std::size_t>(T); ++t)
        for (std::size_t i = 0; i < static_cast<std::size_t>(hs); ++i) {
          const std::size_t at = ((b * H + h) * T + t) * hs + i, row = (b * T + t) * W, kv = (h / g) * hs + i;
          dqkv[row + h * hs + i] = d.dq[at];
          dqkv[row + D + kv] += d.dk[at];
          dqkv[row + D + Hkv * hs + kv] += d.dv[at];
        }
  return dqkv;
}

}  // namespace paxocl::testing
