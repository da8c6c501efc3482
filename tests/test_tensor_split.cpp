// Tensor parallelism's split of a model's tensors (models/tensor_split.h), host only: every
// element of the whole model is owned by exactly one device's part, the parts hold the rows and
// columns Megatron's column- and row-parallel layers need, and impossible layouts are one-line
// errors naming the numbers.
#include <gtest/gtest.h>

#include <numeric>

#include "common/errors.h"
#include "models/tensor_names.h"
#include "models/tensor_split.h"

namespace paxocl::models {
namespace {

GptConfig small_gpt() {
  GptConfig c;
  c.num_layers = 2;
  c.model_dims = 24;
  c.hidden_dims = 40;
  c.num_heads = 4;
  c.dims_per_head = 6;
  c.max_seq_len = 8;
  c.vocab_size = 200;  // padded to 256: the last part of 4 holds 8 real rows of 64 (or 0 of 64 with V = 190 and 8 parts)
  return c;
}

LlamaConfig small_llama(int kv_heads) {
  LlamaConfig c;
  c.num_layers = 2;
  c.model_dims = 24;
  c.hidden_dims = 40;
  c.num_heads = 8;
  c.num_kv_heads = kv_heads;
  c.dims_per_head = 4;
  c.max_seq_len = 8;
  c.vocab_size = 300;
  return c;
}

// Every element of the whole image is placed back from exactly one part, and each part's image is
// the whole one's rows and columns by the rule; replicas equal their owners.
void expect_parts_cover_the_model(const ModelConfig& config, int parts) {
  SCOPED_TRACE(config.describe() + " over " + std::to_string(parts));
  const ParameterLayout whole(config, 16);
  std::vector<float> image(whole.total());
  std::iota(image.begin(), image.end(), 1.0f);
  for (const TensorSpec& t : whole.tensors()) {  // padding stays 0
    for (std::size_t i = t.offset + t.count; i < std::min(image.size(), t.offset + t.count + 16); ++i) {
      bool inside = false;
      for (const TensorSpec& u : whole.tensors()) inside = inside || (i >= u.offset && i < u.offset + u.count);
      if (!inside) image[i] = 0;
    }
  }
  std::vector<float> back(whole.total(), 0.0f);
  std::vector<int> owners(whole.total(), 0);
  std::size_t local_floats = 0;
  for (int r = 0; r < parts; ++r) {
    const std::vector<TensorDef> defs = local_tensor_defs(config, TensorShard{r, parts});
    const ParameterLayout local(defs, config.num_blocks(), 16);
    const TensorSplit split(config, TensorShard{r, parts}, whole, local);
    const std::vector<float> part = split.extract(image);
    ASSERT_EQ(part.size(), local.total());
    // Ownership: place a part of ones and count.
    std::vector<float> ones(part.size(), 1.0f), marks(whole.total(), 0.0f);
    split.place(ones, marks);
    for (std::size_t i = 0; i < marks.size(); ++i) owners[i] += marks[i] != 0.0f;
    split.place(part, back);
    for (const TensorSpec& t : local.tensors()) local_floats += t.count;
  }
  for (const TensorSpec& t : whole.tensors()) {
    for (std::size_t i = t.offset; i < t.offset + t.count; ++i) ASSERT_EQ(owners[i], 1) << t.name << " element " << i - t.offset;
  }
  EXPECT_EQ(back, image);
  EXPECT_GE(local_floats, static_cast<std::size_t>(whole.parameter_count()));  // replicas add, nothing is lost
}

TEST(TensorSplit, EveryElementHasExactlyOneOwner) {
  for (int parts : {1, 2, 4}) expect_parts_cover_the_model(small_gpt(), parts);
  for (int parts : {1, 2, 4, 8}) expect_parts_cover_the_model(small_llama(4), parts);  // kv split, then replicated
  for (int parts : {2, 8}) expect_parts_cover_the_model(small_llama(1), parts);        // multi-query: replicated
}

TEST(TensorSplit, GptPartsAreMegatronsColumnsAndRows) {
  const GptConfig c = small_gpt();
  const ParameterLayout whole(c, 1);
  const TensorShard shard{1, 2};
  const ParameterLayout local(local_tensor_defs(c, shard), c.num_layers, 1);
  std::vector<float> image(whole.total());
  std::iota(image.begin(), image.end(), 0.0f);
  const std::vector<float> part = TensorSplit(c, shard, whole, local).extract(image);
  auto at = [](const ParameterLayout& l, const std::vector<float>& v, const std::string& name, std::size_t row,
               std::size_t col) {
    const TensorSpec& t = l.at(name);
    const std::size_t cols = t.shape.size() > 1 ? static_cast<std::size_t>(t.shape[1]) : 1;
    return v[t.offset + row * cols + col];
  };
  const std::size_t D = 24, Dl = 12, C = 24, Hl = 20;
  const std::string qkv = ParameterLayout::layer_name(0, tensor_names::kQkvWeight);
  EXPECT_EQ(local.at(qkv).shape, (std::vector<std::int64_t>{3 * 12, 24}));
  for (std::size_t part_index = 0; part_index < 3; ++part_index) {  // q, k, v: heads 2 and 3 of 4
    for (std::size_t r = 0; r < Dl; ++r) {
      EXPECT_EQ(at(local, part, qkv, part_index * Dl + r, 5), at(whole, image, qkv, part_index * D + Dl + r, 5));
    }
  }
  const std::string proj = ParameterLayout::layer_name(1, tensor_names::kAttnProjWeight);
  EXPECT_EQ(local.at(proj).shape, (std::vector<std::int64_t>{24, 12}));
  EXPECT_EQ(at(local, part, proj, 7, 3), at(whole, image, proj, 7, Dl + 3));
  const std::string fc = ParameterLayout::layer_name(1, tensor_names::kFcBias);
  EXPECT_EQ(at(local, part, fc, 2, 0), at(whole, image, fc, Hl + 2, 0));
  EXPECT_EQ(local.at(std::string(tensor_names::kTokenEmbedding)).shape, (std::vector<std::int64_t>{128, 24}));
  EXPECT_EQ(at(local, part, std::string(tensor_names::kTokenEmbedding), 0, 1),
            at(whole, image, std::string(tensor_names::kTokenEmbedding), 128, 1));
  // Rank 0's alone: the row-parallel biases and the position table.
  EXPECT_THROW(local.at(std::string(tensor_names::kPositionEmbedding)), std::out_of_range);
  EXPECT_THROW(local.at(ParameterLayout::layer_name(0, tensor_names::kAttnProjBias)), std::out_of_range);
  const ParameterLayout first(local_tensor_defs(c, TensorShard{0, 2}), c.num_layers, 1);
  EXPECT_EQ(first.at(ParameterLayout::layer_name(0, tensor_names::kFcProjBias)).count, C);

  const TensorLocalDims d = tensor_local_dims(c, TensorShard{3, 4});
  EXPECT_EQ(d.heads, 1);
  EXPECT_EQ(d.hidden, 10);
  EXPECT_EQ(d.vocab_begin, 192);
  EXPECT_EQ(d.vocab_real, 8);  // 200 real tokens of the padded 256
}

TEST(TensorSplit, LlamaKvHeadsSplitOrReplicate) {
  // 8 query heads, 2 kv heads: over 2 devices each holds 1 kv head; over 4, each kv head is held by 2.
  const TensorLocalDims split = tensor_local_dims(small_llama(2), TensorShard{1, 2});
  EXPECT_FALSE(split.kv_replicated);
  EXPECT_EQ(split.kv_heads, 1);
  EXPECT_EQ(split.kv_head_begin, 1);
  for (int r = 0; r < 4; ++r) {
    const TensorLocalDims d = tensor_local_dims(small_llama(2), TensorShard{r, 4});
    EXPECT_TRUE(d.kv_replicated);
    EXPECT_EQ(d.heads, 2);
    EXPECT_EQ(d.kv_head_begin, r / 2) << "query heads " << 2 * r << ", " << 2 * r + 1 << " use kv head " << r / 2;
  }
  // The replica's kv rows are left out of its norm: exactly its k and v rows of each block.
  const ModelConfig c = small_llama(2);
  const ParameterLayout whole(c, 1);
  const ParameterLayout local(local_tensor_defs(c, TensorShard{1, 4}), 2, 1);
  const auto replicas = TensorSplit(c, TensorShard{1, 4}, whole, local).replica_ranges();
  std::size_t replica_floats = 0;
  for (const auto& r : replicas) replica_floats += r.count;
  EXPECT_EQ(replica_floats, 2u * (2 * 4 * 24) + 5u * 24) << "2 blocks' k and v rows (hs 4, C 24), 5 norm scales";
}

TEST(TensorSplit, ImpossibleLayoutsNameTheNumbers) {
  GptConfig c = small_gpt();
  try {
    validate_tensor_split(c, 3);
    FAIL() << "3 does not divide 4 heads";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor axis 3 does not divide NUM_HEADS=4"), std::string::npos) << e.what();
  }
  c.num_heads = 8;
  c.dims_per_head = 3;
  c.hidden_dims = 36;
  try {
    validate_tensor_split(c, 8);
    FAIL() << "8 does not divide 36 hidden units";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor axis 8 does not divide HIDDEN_DIMS=36"), std::string::npos) << e.what();
  }
  LlamaConfig l = small_llama(4);
  l.num_heads = 12;
  l.num_kv_heads = 3;
  l.hidden_dims = 48;
  try {
    validate_tensor_split(l, 2);
    FAIL() << "2 and 3 kv heads";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor axis 2 and NUM_KV_HEADS=3"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace paxocl::models
