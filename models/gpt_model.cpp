#include "models/gpt_model.h"

#include <fmt/format.h>

#include "models/initial_parameters.h"
#include "models/tensor_names.h"

namespace paxocl::models {

namespace names = tensor_names;

namespace {
std::size_t layout_alignment(const device::DeviceInfo& info, device::DType fprop) {
  // Sub-buffers must start on the device's base address alignment, both the float32 tensors' and
  // their views in the fprop_dtype copy (2-byte elements at the same offsets); 64 elements is a
  // floor that also keeps tensors cache-line aligned.
  const std::size_t smallest = std::min(sizeof(float), device::dtype_size(fprop));
  return std::max<std::size_t>(64, info.base_address_align_bytes / smallest);
}

std::size_t align_up(std::size_t n, std::size_t alignment) { return (n + alignment - 1) / alignment * alignment; }
}  // namespace

GptModel::GptModel(kernels::DeviceRuntime& runtime, const GptConfig& config, ModelOptions options)
    : runtime_(runtime),
      config_((config.validate(), config)),
      options_(options),
      layout_(config, layout_alignment(runtime.device().info(), runtime.act_dtype())),
      rest_unit_(layout_.unit(-1)),
      block_unit_(layout_.unit(0)),
      params_(make_buffer(runtime.device(), resident_floats(), "parameters")),
      grads_(make_buffer(runtime.device(), resident_floats(), "gradients")),
      compute_(runtime.act_dtype() == device::DType::kF32
                   ? ActBuffer::sharing(params_)
                   : make_buffer(runtime.device(), runtime.act_dtype(), resident_floats(), "parameters.compute")) {
  const device::Device& device = runtime.device();
  if (options_.max_seq_len == 0) options_.max_seq_len = static_cast<std::size_t>(config.max_seq_len);
  const std::size_t rows = options_.max_batch * options_.max_seq_len;
  const std::size_t C = config.model_dims, D = config.attention_dims(), H = config.hidden_dims;
  const device::DType act = runtime.act_dtype();
  runtime.kernels().elementwise.fill(params_, 0.0f);  // padding between tensors stays zero
  runtime.kernels().elementwise.fill(grads_, 0.0f);
  const std::size_t allocated_before_layers = device.context().bytes_allocated();
  embedding_ = std::make_unique<Embedding>(device, act, param(names::kTokenEmbedding), param(names::kPositionEmbedding), C, rows, "embedding");
  blocks_.reserve(static_cast<std::size_t>(config.num_layers));
  for (int l = 0; l < config.num_layers; ++l) {
    auto name = [&](std::string_view suffix) { return ParameterLayout::layer_name(l, suffix); };
    const std::string prefix = fmt::format("{}{}", names::kBlockPrefix, l);  // its layers' labels
    blocks_.emplace_back(
        device, act,
        LayerNorm(device, act, param(name(names::kLn1Scale)), param(name(names::kLn1Bias)), C, rows, prefix + ".ln1"),
        SelfAttention(
            Linear(device, act, param(name(names::kQkvWeight)), param(name(names::kQkvBias)), C, 3 * D, rows, prefix + ".qkv"),
            CausalAttention(device, act, static_cast<std::size_t>(config.num_heads),
                            static_cast<std::size_t>(config.dims_per_head), options_.max_batch, options_.max_seq_len,
                            options_.attention_workspace_bytes, prefix + ".attn"),
            Linear(device, act, param(name(names::kAttnProjWeight)), param(name(names::kAttnProjBias)), D, C, rows, prefix + ".proj")),
        LayerNorm(device, act, param(name(names::kLn2Scale)), param(name(names::kLn2Bias)), C, rows, prefix + ".ln2"),
        Mlp(Linear(device, act, param(name(names::kFcWeight)), param(name(names::kFcBias)), C, H, rows, prefix + ".fc",
                   Linear::Activation::kGelu),
            Linear(device, act, param(name(names::kFcProjWeight)), param(name(names::kFcProjBias)), H, C, rows, prefix + ".fcproj")),
        C, rows, prefix);
  }
  final_norm_ = std::make_unique<LayerNorm>(device, act, param(names::kFinalNormScale), param(names::kFinalNormBias), C, rows, "lnf");
  head_ = std::make_unique<TiedLmHead>(device, act, param(names::kTokenEmbedding), C, static_cast<std::size_t>(config.vocab_size),
                                       static_cast<std::size_t>(config.padded_vocab()), rows, "lm_head");
  activation_bytes_ = device.context().bytes_allocated() - allocated_before_layers;
}

// Full residency: the layout's offset. FSDP residency: unit(-1) at 0, then slot s of block units
// at unit_device_offset(s); a tensor sits at its packed offset inside its unit.
std::size_t GptModel::unit_device_offset(int block) const {
  const std::size_t a = layout_.alignment();
  if (block < 0) return 0;
  if (options_.resident_block_slots <= 0) {  // full residency has no slots: a caller's bug, not a modulo by zero
    throw std::logic_error(fmt::format("GptModel: block {}'s FSDP slot asked for without FSDP residency", block));
  }
  const int slot = block % options_.resident_block_slots;
  return align_up(rest_unit_.size, a) + static_cast<std::size_t>(slot) * align_up(block_unit_.size, a);
}

std::size_t GptModel::resident_floats() const {
  const int slots = options_.resident_block_slots;
  if (slots < 0) throw ConfigError(fmt::format("resident_block_slots={}: must be >= 0", slots));
  if (slots == 0) return layout_.total();
  return align_up(rest_unit_.size, layout_.alignment()) +
         static_cast<std::size_t>(slots) * align_up(block_unit_.size, layout_.alignment());
}

std::size_t GptModel::device_offset(const TensorSpec& t) const {
  if (options_.resident_block_slots == 0) return t.offset;
  return unit_device_offset(ParameterLayout::block_of(t)) + layout_.packed_offset(t);
}

FloatBuffer GptModel::unit_parameters(int block) const {
  const std::size_t size = block < 0 ? rest_unit_.size : block_unit_.size;
  return params_.view(unit_device_offset(block), size, fmt::format("unit {} parameters", block));
}

FloatBuffer GptModel::unit_gradients(int block) const {
  const std::size_t size = block < 0 ? rest_unit_.size : block_unit_.size;
  return grads_.view(unit_device_offset(block), size, fmt::format("unit {} gradients", block));
}

void GptModel::cast_unit(int block) {
  const std::size_t size = block < 0 ? rest_unit_.size : block_unit_.size;
  runtime_.kernels().cast.to_act(compute_, params_, unit_device_offset(block), size);
}

void GptModel::require_full_residency(const char* what) const {
  if (options_.resident_block_slots != 0) {
    throw std::logic_error(fmt::format("GptModel::{} needs every parameter resident (this model holds FSDP slots)", what));
  }
}

Param GptModel::param(std::string_view tensor) const {
  const std::string name(tensor);
  const TensorSpec& t = layout_.at(name);
  const std::size_t at = device_offset(t);
  FloatBuffer value = params_.view(at, t.count, name);
  ActBuffer compute = runtime_.act_dtype() == device::DType::kF32 ? ActBuffer::sharing(value)
                                                                   : compute_.view(at, t.count, name + ".compute");
  return Param{std::move(value), grads_.view(at, t.count, name + ".grad"), std::move(compute)};
}

void GptModel::init(std::uint64_t seed) { set_parameters(initial_parameters(layout_, seed, config_.init_std)); }

void GptModel::set_parameters(std::span<const float> flat) {
  require_full_residency("set_parameters");
  if (flat.size() != layout_.total()) {
    throw DataError(fmt::format("parameter image has {} floats; this model's layout needs {}", flat.size(), layout_.total()));
  }
  runtime_.queue().write(params_, flat);
}

std::vector<float> GptModel::parameters() {
  require_full_residency("parameters");
  std::vector<float> flat(layout_.total());
  runtime_.queue().read(params_, std::span<float>(flat));
  return flat;
}

std::vector<float> GptModel::gradients() {
  require_full_residency("gradients");
  std::vector<float> flat(layout_.total());
  runtime_.queue().read(grads_, std::span<float>(flat));
  return flat;
}

void GptModel::load_weights(const HostWeights& weights) { set_parameters(flat_from_weights(weights)); }

std::vector<float> GptModel::flat_from_weights(const HostWeights& weights) const {
  const GptConfig& f = weights.config.gpt();
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
  return flat;
}

HostWeights GptModel::save_weights() { return HostWeights{config_, layout_.alignment(), parameters()}; }

LayerContext GptModel::context_for(const inputs::Batch& batch) {
  batch.validate(config_.vocab_size, config_.max_seq_len);
  if (static_cast<std::size_t>(batch.batch) > options_.max_batch ||
      static_cast<std::size_t>(batch.seq_len) > options_.max_seq_len) {
    throw DataError(fmt::format("batch {} x {} exceeds the {} x {} this model was built for", batch.batch,
                                batch.seq_len, options_.max_batch, options_.max_seq_len));
  }
  return LayerContext{runtime_.device(), runtime_.kernels(), runtime_.gemm(), static_cast<std::size_t>(batch.batch),
                      static_cast<std::size_t>(batch.seq_len)};
}

GptModel::Pass GptModel::begin_pass(const inputs::Batch& batch, bool gradients) {
  Pass pass{context_for(batch), &batch, nullptr};
  if (gradients) runtime_.kernels().elementwise.fill(grads_, 0.0f);  // every gradient kernel accumulates
  // The step's weights in fprop_dtype: all of them, or under FSDP residency the unit outside the
  // blocks (each block's slot is cast when the block runs, after the scheduler has gathered it).
  if (options_.resident_block_slots == 0) {
    runtime_.kernels().cast.to_act(compute_, params_);
  } else {
    cast_unit(-1);
  }
  pass.x = &embedding_->forward(pass.ctx, batch.ids);
  return pass;
}

void GptModel::forward_block(Pass& pass, int block) {
  if (options_.resident_block_slots > 0) cast_unit(block);
  pass.x = &blocks_.at(static_cast<std::size_t>(block)).forward(pass.ctx, *pass.x);
}

LossStats GptModel::forward_loss(Pass& pass) {
  return head_->forward(pass.ctx, final_norm_->forward(pass.ctx, *pass.x), pass.batch->targets, pass.batch->weights,
                        loss_scale_);
}

void GptModel::begin_backward(Pass& pass) { pass.x = &final_norm_->backward(pass.ctx, head_->backward(pass.ctx)); }

void GptModel::backward_block(Pass& pass, int block) {
  if (options_.resident_block_slots > 0) cast_unit(block);  // the slot may hold another block's weights by now
  pass.x = &blocks_.at(static_cast<std::size_t>(block)).backward(pass.ctx, *pass.x);
}

void GptModel::finish_backward(Pass& pass) { embedding_->backward(pass.ctx, *pass.x); }

}  // namespace paxocl::models
