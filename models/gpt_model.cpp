#include "models/gpt_model.h"

#include <fmt/format.h>

#include "kernels_cl/auto_gemm.h"
#include "models/layers/param_init.h"

namespace paxocl::models {

namespace {
std::size_t layout_alignment(const device::DeviceInfo& info) {
  // Sub-buffers must start on the device's base address alignment; 64 floats is a floor that
  // also keeps tensors cache-line aligned.
  return std::max<std::size_t>(64, info.base_address_align_bytes / sizeof(float));
}
}  // namespace

GptModel::GptModel(device::Device& device, device::ProgramCache& cache, const GptConfig& config,
                   GptModelOptions options)
    : device_(device),
      config_((config.validate(), config)),
      options_(options),
      layout_(config, layout_alignment(device.info())),
      kernels_(cache, device),
      gemm_(kernels::make_gemm(device, cache, options.gemm)),
      params_(make_buffer(device, layout_.total(), "parameters")),
      grads_(make_buffer(device, layout_.total(), "gradients")) {
  if (options_.max_seq_len == 0) options_.max_seq_len = static_cast<std::size_t>(config.max_seq_len);
  const std::size_t rows = options_.max_batch * options_.max_seq_len;
  const std::size_t C = config.model_dims, D = config.attention_dims(), H = config.hidden_dims;
  kernels_.elementwise.fill(params_, 0.0f);  // padding between tensors stays zero
  embedding_ = std::make_unique<Embedding>(device, param("wte"), param("wpe"), C, rows, "embedding");
  blocks_.reserve(static_cast<std::size_t>(config.num_layers));
  for (int l = 0; l < config.num_layers; ++l) {
    auto name = [&](const char* suffix) { return ParameterLayout::layer_name(l, suffix); };
    const std::string prefix = fmt::format("h{}", l);
    blocks_.emplace_back(
        device, LayerNorm(device, param(name("ln1.scale")), param(name("ln1.bias")), C, rows, prefix + ".ln1"),
        SelfAttention(Linear(device, param(name("attn.qkv.w")), param(name("attn.qkv.b")), C, 3 * D, rows, prefix + ".qkv"),
                      CausalAttention(device, static_cast<std::size_t>(config.num_heads),
                                      static_cast<std::size_t>(config.dims_per_head), options_.max_batch,
                                      options_.max_seq_len, options_.attention_workspace_bytes, prefix + ".attn"),
                      Linear(device, param(name("attn.proj.w")), param(name("attn.proj.b")), D, C, rows, prefix + ".proj")),
        LayerNorm(device, param(name("ln2.scale")), param(name("ln2.bias")), C, rows, prefix + ".ln2"),
        Mlp(Linear(device, param(name("mlp.fc.w")), param(name("mlp.fc.b")), C, H, rows, prefix + ".fc",
                   Linear::Activation::kGelu),
            Linear(device, param(name("mlp.proj.w")), param(name("mlp.proj.b")), H, C, rows, prefix + ".fcproj")),
        C, rows, prefix);
  }
  final_norm_ = std::make_unique<LayerNorm>(device, param("lnf.scale"), param("lnf.bias"), C, rows, "lnf");
  head_ = std::make_unique<TiedLmHead>(device, param("wte"), C, static_cast<std::size_t>(config.vocab_size),
                                       static_cast<std::size_t>(config.padded_vocab()), rows, "lm_head");
}

Param GptModel::param(const std::string& name) const {
  const TensorSpec& t = layout_.at(name);
  return Param{params_.view(t.offset, t.count, name), grads_.view(t.offset, t.count, name + ".grad")};
}

void GptModel::init(std::uint64_t seed) {
  Rng rng(seed);
  auto& q = device_.queue();
  const float std = config_.init_std;
  embedding_->init(q, rng, std);
  for (const TransformerBlock& block : blocks_) block.init(q, rng, std);
  final_norm_->init(q);
  q.finish();
}

void GptModel::set_parameters(std::span<const float> flat) {
  if (flat.size() != layout_.total()) {
    throw DataError(fmt::format("parameter image has {} floats; this model's layout needs {}", flat.size(), layout_.total()));
  }
  device_.queue().write(params_, flat);
}

std::vector<float> GptModel::parameters() {
  std::vector<float> flat(layout_.total());
  device_.queue().read(params_, std::span<float>(flat));
  return flat;
}

std::vector<float> GptModel::gradients() {
  std::vector<float> flat(layout_.total());
  device_.queue().read(grads_, std::span<float>(flat));
  return flat;
}

void GptModel::load_weights(const HostWeights& weights) {
  const GptConfig& f = weights.config;
  const GptConfig& m = config_;
  if (f.num_layers != m.num_layers || f.model_dims != m.model_dims || f.hidden_dims != m.hidden_dims ||
      f.num_heads != m.num_heads || f.dims_per_head != m.dims_per_head || f.max_seq_len != m.max_seq_len ||
      f.vocab_size != m.vocab_size || f.padded_vocab() != m.padded_vocab()) {
    throw ConfigError(fmt::format(
        "weights file holds L={} C={} H={} NH={} hs={} T={} V={} (Vp={}) but the experiment has L={} C={} H={} NH={} "
        "hs={} T={} V={} (Vp={}); set the experiment's hyper-parameters to the file's",
        f.num_layers, f.model_dims, f.hidden_dims, f.num_heads, f.dims_per_head, f.max_seq_len, f.vocab_size,
        f.padded_vocab(), m.num_layers, m.model_dims, m.hidden_dims, m.num_heads, m.dims_per_head, m.max_seq_len,
        m.vocab_size, m.padded_vocab()));
  }
  const ParameterLayout source(f, weights.alignment);
  std::vector<float> flat(layout_.total(), 0.0f);
  for (const TensorSpec& t : layout_.tensors()) {
    const TensorSpec& s = source.at(t.name);
    std::copy_n(weights.data.begin() + static_cast<std::ptrdiff_t>(s.offset), t.count,
                flat.begin() + static_cast<std::ptrdiff_t>(t.offset));
  }
  set_parameters(flat);
}

HostWeights GptModel::save_weights() { return HostWeights{config_, layout_.alignment(), parameters()}; }

LayerContext GptModel::context_for(const inputs::Batch& batch) {
  batch.validate(config_.vocab_size, config_.max_seq_len);
  if (static_cast<std::size_t>(batch.batch) > options_.max_batch ||
      static_cast<std::size_t>(batch.seq_len) > options_.max_seq_len) {
    throw DataError(fmt::format("batch {} x {} exceeds the {} x {} this model was built for", batch.batch,
                                batch.seq_len, options_.max_batch, options_.max_seq_len));
  }
  return LayerContext{device_, kernels_, *gemm_, static_cast<std::size_t>(batch.batch),
                      static_cast<std::size_t>(batch.seq_len)};
}

const FloatBuffer& GptModel::forward_trunk(LayerContext& ctx, const inputs::Batch& batch) {
  const FloatBuffer* x = &embedding_->forward(ctx, batch.ids);
  for (TransformerBlock& block : blocks_) x = &block.forward(ctx, *x);
  return final_norm_->forward(ctx, *x);
}

LossStats GptModel::evaluate(const inputs::Batch& batch) {
  LayerContext ctx = context_for(batch);
  return head_->forward(ctx, forward_trunk(ctx, batch), batch.targets, batch.weights);
}

LossStats GptModel::train_step_gradients(const inputs::Batch& batch, const std::function<void(int)>& block_done) {
  LayerContext ctx = context_for(batch);
  kernels_.elementwise.fill(grads_, 0.0f);  // every gradient kernel accumulates
  const LossStats loss = head_->forward(ctx, forward_trunk(ctx, batch), batch.targets, batch.weights);
  const FloatBuffer* dx = &final_norm_->backward(ctx, head_->backward(ctx));
  for (int l = static_cast<int>(blocks_.size()) - 1; l >= 0; --l) {
    dx = &blocks_[static_cast<std::size_t>(l)].backward(ctx, *dx);
    if (block_done) block_done(l);
  }
  embedding_->backward(ctx, *dx);
  return loss;
}

}  // namespace paxocl::models
