#include "models/block_model.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "models/initial_parameters.h"

namespace paxocl::models {

namespace {
std::size_t layout_alignment(const device::DeviceInfo& info, device::DType fprop) {
  // Sub-buffers must start on the device's base address alignment, both the float32 tensors' and
  // their views in the fprop_dtype copy (2-byte elements at the same offsets); 64 elements is a
  // floor that also keeps tensors cache-line aligned.
  const std::size_t smallest = std::min(sizeof(float), device::dtype_size(fprop));
  return std::max<std::size_t>(64, info.base_address_align_bytes / smallest);
}

std::size_t align_up(std::size_t n, std::size_t alignment) { return (n + alignment - 1) / alignment * alignment; }

std::vector<std::size_t> unit_sizes(const ParameterLayout& layout) {
  std::vector<std::size_t> sizes;
  for (int b = -1; b < layout.num_blocks(); ++b) sizes.push_back(layout.unit(b).size);
  return sizes;
}

// A stage axis of 1 is the whole model: its span is every block.
ModelOptions with_whole_stage(ModelOptions options, const ModelConfig& config) {
  if (options.stage.stages == 1) options.stage = StageSpan{0, 1, 0, config.num_blocks()};
  return options;
}

// The same architecture with the same tensors (names and shapes) and vocabulary: INIT_STD aside,
// what a weight file must agree on.
bool same_shapes(const ModelConfig& a, const ModelConfig& b) {
  if (a.architecture() != b.architecture() || a.vocab_size() != b.vocab_size() || a.max_seq_len() != b.max_seq_len()) {
    return false;
  }
  const std::vector<TensorDef> da = a.tensor_defs(), db = b.tensor_defs();
  return std::equal(da.begin(), da.end(), db.begin(), db.end(),
                    [](const TensorDef& x, const TensorDef& y) { return x.name == y.name && x.shape == y.shape; });
}
}  // namespace

BlockModel::BlockModel(kernels::DeviceRuntime& runtime, ModelConfig config, ModelOptions options)
    : options_(with_whole_stage(options, config)),
      runtime_(runtime),
      config_((config.validate(), std::move(config))),
      layout_(stage_tensor_defs(local_tensor_defs(config_, options.tensor), options_.stage), options_.stage.blocks(),
              layout_alignment(runtime.device().info(), runtime.act_dtype())),
      unit_floats_(unit_sizes(layout_)) {
  if (options_.shared_parameters) {
    params_ = options_.shared_parameters->params;
    grads_ = options_.shared_parameters->grads;
    compute_ = options_.shared_parameters->compute;
    if (params_.count() != resident_floats() || grads_.count() != resident_floats()) {
      throw std::logic_error("BlockModel: shared parameter buffers of another size than this model's layout");
    }
  } else {
    params_ = make_buffer(runtime.device(), resident_floats(), "parameters");
    grads_ = make_buffer(runtime.device(), resident_floats(), "gradients");
    compute_ = runtime.act_dtype() == device::DType::kF32
                   ? ActBuffer::sharing(params_)
                   : make_buffer(runtime.device(), runtime.act_dtype(), resident_floats(), "parameters.compute");
  }
  if (options_.max_seq_len == 0) options_.max_seq_len = static_cast<std::size_t>(config_.max_seq_len());
  if (options_.sequence_parallel && !options_.tensor.split()) {
    throw ConfigError("SEQUENCE_PARALLEL splits the tensor axis's activations by rows: it needs a tensor axis > 1");
  }
  // Images go whole -> the tensor rank's parts (all blocks) -> the stage's tensors.
  const bool staged = options_.stage.stages > 1;
  if (options_.tensor.split() || staged) global_layout_ = std::make_unique<ParameterLayout>(config_, layout_.alignment());
  if (staged) {
    stage_part_ = std::make_unique<StagePart>(config_, options_.tensor, options_.stage, *global_layout_, layout_);
  } else if (options_.tensor.split()) {
    split_ = std::make_unique<TensorSplit>(config_, options_.tensor, *global_layout_, layout_);
  }
  if (options_.shared_parameters) return;
  runtime.kernels().elementwise.fill(params_, 0.0f);  // padding between tensors stays zero
  runtime.kernels().elementwise.fill(grads_, 0.0f);
}

std::size_t BlockModel::stream_rows() const {
  return options_.sequence_parallel ? SequenceParallel::shard_rows(max_rows(), options_.tensor.size) : max_rows();
}

void BlockModel::begin_layers() {
  allocated_before_layers_ = runtime_.device().context().bytes_allocated();
  saved_sites_ = models::saved_sites(options_.checkpoint_policy, options_.sequence_parallel);
  shared_ = std::make_unique<SharedActivations>(runtime_.device());
  const std::size_t dims = config_.visit([](const auto& c) { return static_cast<std::size_t>(c.model_dims); });
  if (!options_.stage.first_stage()) {
    stage_input_ = make_buffer(runtime_.device(), runtime_.act_dtype(), max_rows() * dims, "stage input");
  }
  if (!options_.stage.last_stage()) {
    stage_output_gradient_ = make_buffer(runtime_.device(), runtime_.act_dtype(), max_rows() * dims, "stage output gradient");
  }
  if (options_.sequence_parallel) {
    sequence_ = std::make_unique<SequenceParallel>(runtime_.device(), runtime_.act_dtype(), max_rows(), dims,
                                                   options_.tensor.size);
  }
}

ActBuffer& BlockModel::stage_input() {
  if (!stage_input_) throw std::logic_error("Model::stage_input on a model that starts with the embedding");
  return *stage_input_;
}

ActBuffer& BlockModel::stage_output_gradient() {
  if (!stage_output_gradient_) throw std::logic_error("Model::stage_output_gradient on a model that ends with the head");
  return *stage_output_gradient_;
}

BufferSource BlockModel::block_buffers(const std::string& block_prefix, BlockSite site) {
  if (!shared_) throw std::logic_error("BlockModel::block_buffers before begin_layers");
  return BufferSource(runtime_.device(), *shared_, block_prefix, saved_sites_, site);
}

// Full residency: the layout's offset. FSDP residency: unit(-1) at 0, then slot s of block units
// at unit_device_offset(s); a tensor sits at its packed offset inside its unit.
std::size_t BlockModel::unit_device_offset(int block) const {
  const std::size_t a = layout_.alignment();
  if (block < 0) return 0;
  if (options_.resident_block_slots <= 0) {  // full residency has no slots: a caller's bug, not a modulo by zero
    throw std::logic_error(fmt::format("BlockModel: block {}'s FSDP slot asked for without FSDP residency", block));
  }
  const int slot = block % options_.resident_block_slots;
  return align_up(unit_floats(-1), a) + static_cast<std::size_t>(slot) * align_up(slot_floats(), a);
}

std::size_t BlockModel::slot_floats() const {
  return *std::max_element(unit_floats_.begin() + 1, unit_floats_.end());
}

std::size_t BlockModel::resident_floats() const {
  const int slots = options_.resident_block_slots;
  if (slots < 0) throw ConfigError(fmt::format("resident_block_slots={}: must be >= 0", slots));
  if (slots == 0) return layout_.total();
  return align_up(unit_floats(-1), layout_.alignment()) +
         static_cast<std::size_t>(slots) * align_up(slot_floats(), layout_.alignment());
}

std::size_t BlockModel::device_offset(const TensorSpec& t) const {
  if (options_.resident_block_slots == 0) return t.offset;
  return unit_device_offset(ParameterLayout::block_of(t)) + layout_.packed_offset(t);
}

FloatBuffer BlockModel::unit_parameters(int block) const {
  const std::size_t size = unit_floats(block);
  return params_.view(unit_device_offset(block), size, fmt::format("unit {} parameters", block));
}

FloatBuffer BlockModel::unit_gradients(int block) const {
  const std::size_t size = unit_floats(block);
  return grads_.view(unit_device_offset(block), size, fmt::format("unit {} gradients", block));
}

void BlockModel::cast_unit(int block) {
  const std::size_t size = unit_floats(block);
  runtime_.kernels().cast.to_act(compute_, params_, unit_device_offset(block), size);
}

void BlockModel::require_full_residency(const char* what) const {
  if (options_.resident_block_slots != 0) {
    throw std::logic_error(fmt::format("BlockModel::{} needs every parameter resident (this model holds FSDP slots)", what));
  }
}

Param BlockModel::param(std::string_view tensor) const {
  const std::string name(tensor);
  const TensorSpec& t = layout_.at(name);
  const std::size_t at = device_offset(t);
  FloatBuffer value = params_.view(at, t.count, name);
  ActBuffer compute = runtime_.act_dtype() == device::DType::kF32 ? ActBuffer::sharing(value)
                                                                   : compute_.view(at, t.count, name + ".compute");
  return Param{std::move(value), grads_.view(at, t.count, name + ".grad"), std::move(compute)};
}

std::vector<float> BlockModel::own_image(std::span<const float> whole) const {
  if (stage_part_) return stage_part_->extract(whole);
  return split_ ? split_->extract(whole) : std::vector<float>(whole.begin(), whole.end());
}

void BlockModel::init(std::uint64_t seed) {
  set_parameters(own_image(initial_parameters(global_layout_ ? *global_layout_ : layout_, seed, config_.init_std())));
}

void BlockModel::set_parameters(std::span<const float> flat) {
  require_full_residency("set_parameters");
  if (flat.size() != layout_.total()) {
    throw DataError(fmt::format("parameter image has {} floats; this model's layout needs {}", flat.size(), layout_.total()));
  }
  runtime_.queue().write(params_, flat);
}

std::vector<float> BlockModel::parameters() {
  require_full_residency("parameters");
  std::vector<float> flat(layout_.total());
  runtime_.queue().read(params_, std::span<float>(flat));
  return flat;
}

std::vector<float> BlockModel::gradients() {
  require_full_residency("gradients");
  std::vector<float> flat(layout_.total());
  runtime_.queue().read(grads_, std::span<float>(flat));
  return flat;
}

void BlockModel::load_weights(const HostWeights& weights) {
  set_parameters(own_image(flat_from_weights(weights)));
}

std::vector<float> BlockModel::flat_from_weights(const HostWeights& weights) const {
  if (!same_shapes(weights.config, config_)) {
    throw ConfigError(fmt::format("weights file holds {} but the experiment has {}; set the experiment's "
                                  "hyper-parameters to the file's",
                                  weights.config.describe(), config_.describe()));
  }
  const ParameterLayout source(weights.config, weights.alignment);
  const ParameterLayout& whole = global_layout_ ? *global_layout_ : layout_;
  std::vector<float> flat(whole.total(), 0.0f);
  for (const TensorSpec& t : whole.tensors()) {
    const TensorSpec& s = source.at(t.name);
    std::copy_n(weights.data.begin() + static_cast<std::ptrdiff_t>(s.offset), t.count,
                flat.begin() + static_cast<std::ptrdiff_t>(t.offset));
  }
  return flat;
}

HostWeights BlockModel::save_weights() {
  if (global_layout_) throw ConfigError("a tensor-parallel model or pipeline stage holds part of the model; save the job's whole parameters");
  return HostWeights{config_, layout_.alignment(), parameters()};
}

LayerContext BlockModel::start_pass(const inputs::Batch& batch, bool gradients) {
  batch.validate(config_.vocab_size(), config_.max_seq_len());
  if (static_cast<std::size_t>(batch.batch) > options_.max_batch ||
      static_cast<std::size_t>(batch.seq_len) > options_.max_seq_len) {
    throw DataError(fmt::format("batch {} x {} exceeds the {} x {} this model was built for", batch.batch,
                                batch.seq_len, options_.max_batch, options_.max_seq_len));
  }
  if (gradients) runtime_.kernels().elementwise.fill(grads_, 0.0f);
  if (options_.resident_block_slots == 0) {
    runtime_.kernels().cast.to_act(compute_, params_);
  } else {
    cast_unit(-1);
  }
  if (options_.tensor.split() && tensor_group_ == nullptr) {
    throw std::logic_error("a tensor-parallel model's pass needs its tensor group (Model::set_tensor_group)");
  }
  const auto rows = static_cast<std::size_t>(batch.batch) * static_cast<std::size_t>(batch.seq_len);
  if (sequence_ && rows % static_cast<std::size_t>(options_.tensor.size) != 0) {
    // config/sequence_parallel_rules.h refuses such layouts before a job starts: a direct caller's backstop.
    throw ConfigError(fmt::format("SEQUENCE_PARALLEL splits a pass's {} x {} = {} rows over the tensor axis {}, "
                                  "which does not divide them; choose MAX_SEQ_LEN and the pass's sequences "
                                  "(PERCORE_BATCH_SIZE, NUM_SUB_BATCHES, NUM_MICROBATCHES) so that it does",
                                  batch.batch, batch.seq_len, rows, options_.tensor.size));
  }
  return LayerContext{runtime_.device(), runtime_.kernels(), runtime_.gemm(), static_cast<std::size_t>(batch.batch),
                      static_cast<std::size_t>(batch.seq_len), options_.tensor.split() ? tensor_group_ : nullptr, sequence_.get()};
}

LayerContext BlockModel::start_decode(const std::vector<int>& tokens, std::size_t batch, std::size_t n,
                                      std::size_t first_position) {
  require_full_residency("decode");
  if (global_layout_) {
    throw ConfigError("decoding runs on one device: sample from the job's whole weights (tensor and stage axes 1)");
  }
  if (batch == 0 || n == 0 || tokens.size() != batch * n) {
    throw DataError(fmt::format("decoding needs {} x {} token ids, got {}", batch, n, tokens.size()));
  }
  if (batch > options_.max_batch || first_position + n > options_.max_seq_len) {
    throw ConfigError(fmt::format("decoding {} sequences to position {}: the model holds {} sequences of {} tokens "
                                  "(MAX_SEQ_LEN)", batch, first_position + n, options_.max_batch, options_.max_seq_len));
  }
  for (int id : tokens) {
    if (id < 0 || id >= config_.vocab_size()) {
      throw DataError(fmt::format("token id {} is outside the vocabulary [0, {})", id, config_.vocab_size()));
    }
  }
  // A sequence's first tokens take the weights as they are now; its later ones continue with that
  // copy, as its key/value caches do (Model::decode: weights do not change mid-sequence). Casting
  // 124M weights at every token took most of a bfloat16 decode step on a CPU.
  if (first_position == 0) runtime_.kernels().cast.to_act(compute_, params_);
  return LayerContext{runtime_.device(), runtime_.kernels(), runtime_.gemm(), batch, n};
}

void BlockModel::prepare_block(int block) {
  if (options_.resident_block_slots > 0) cast_unit(block);
}

}  // namespace paxocl::models
