// TensorDef / TensorSpec: one named parameter tensor of a model, as its architecture declares it
// (TensorDef) and as ParameterLayout places it in the flat parameter array (TensorSpec).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace paxocl::models {

// Gaussian: N(0, INIT_STD), or N(0, the tensor's own init_std when it has one); kOne: norm scales.
enum class TensorInit { kGaussian, kZero, kOne };

// A model architecture's parameter: shape row-major (weights as (out, in)), every entry >= 1;
// `block` numbers the transformer block it belongs to (0 .. num_blocks - 1), -1 outside the blocks.
struct TensorDef {
  std::string name;
  std::vector<std::int64_t> shape;
  bool decay = false;  // weight decay applies (matrices)
  TensorInit init = TensorInit::kZero;
  int block = -1;
  float init_std = 0.0f;  // kGaussian: this std instead of INIT_STD (0: INIT_STD), e.g. the SSM's C
};

// A TensorDef placed in the layout: [offset, offset + count) floats of the flat array.
struct TensorSpec {
  using Init = TensorInit;
  std::string name;
  std::vector<std::int64_t> shape;
  std::size_t offset = 0;  // in floats, from the start of the flat array
  std::size_t count = 0;   // product of shape
  bool decay = false;
  Init init = Init::kZero;
  int block = -1;
  float init_std = 0.0f;  // as TensorDef's
};

}  // namespace paxocl::models
