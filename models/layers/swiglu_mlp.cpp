#include "models/layers/swiglu_mlp.h"

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::models {

namespace {
std::size_t checked_hidden(std::size_t dims, std::size_t hidden, const std::string& name) {
  if (dims == 0 || hidden == 0) {
    throw ConfigError(fmt::format("{}: a SwiGLU MLP needs dims and hidden of at least 1, got {} and {}", name, dims,
                                  hidden));
  }
  return hidden;
}
}  // namespace

SwigluMlp::SwigluMlp(const BufferSource& buffers, device::DType act, Param gate_up_weight, Param down_weight,
                     std::size_t dims, std::size_t hidden, std::size_t max_rows, const std::string& name)
    : hidden_(checked_hidden(dims, hidden, name)),
      gate_up_(buffers, act, std::move(gate_up_weight), std::nullopt, dims, 2 * hidden, max_rows, name + ".gate_up"),
      down_(buffers.at(BlockSite::kFfn2), act, std::move(down_weight), std::nullopt, hidden, dims, max_rows, name + ".down"),
      h_(buffers.saved(act, max_rows * hidden, name + ".h")),
      dgu_(buffers.transient(act, max_rows * 2 * hidden, name + ".dgu")) {}

ActBuffer& SwigluMlp::forward(LayerContext& ctx, const ActBuffer& x) { return down_.forward(ctx, hidden(ctx, x)); }

ActBuffer& SwigluMlp::hidden(LayerContext& ctx, const ActBuffer& x) {
  gu_ = &gate_up_.forward(ctx, x);
  ctx.kernels.swiglu.forward(h_, *gu_, ctx.rows(), hidden_);
  return h_;
}

ActBuffer& SwigluMlp::backward(LayerContext& ctx, const ActBuffer& dy, const std::function<void(ActBuffer&)>& after_dx) {
  ctx.kernels.swiglu.backward(dgu_, *gu_, down_.backward(ctx, dy), ctx.rows(), hidden_);
  return gate_up_.backward(ctx, dgu_, after_dx);
}

}  // namespace paxocl::models
