// Shared plumbing of the float64 references (reference_gpt.cpp, reference_llama.cpp): argument
// checks that throw std::invalid_argument, and a model's parameter tensors read from and gradients
// written into its flat layout by name, shapes checked.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "models/parameter_layout.h"

namespace paxocl::testing::reference {

using Vec = std::vector<double>;
using std::size_t;

inline void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("reference: " + what);
}
inline void require_size(const Vec& v, size_t expected, const char* name) {
  require(v.size() == expected, fmt::format("{} has {} elements, expected {}", name, v.size(), expected));
}
inline void require_dims(std::initializer_list<int> dims) {
  for (int d : dims) require(d >= 1, fmt::format("dimension {} must be at least 1", d));
}
inline size_t sz(int n) { return static_cast<size_t>(n); }
inline void add_into(Vec& acc, const Vec& v) {
  for (size_t i = 0; i < acc.size(); ++i) acc[i] += v[i];
}

// Copies of the parameter tensors in double, looked up by name with their shapes checked.
class Params {
 public:
  Params(const models::ParameterLayout& layout, const Vec& flat) : layout_(layout), flat_(flat) {
    require_size(flat, layout.total(), "params (layout.total())");
  }
  Vec get(const std::string& name, std::initializer_list<int> shape) const {
    const models::TensorSpec& spec = layout_.at(name);
    require(spec.shape.size() == shape.size(), fmt::format("tensor {} has rank {}", name, spec.shape.size()));
    size_t i = 0;
    for (int d : shape) {
      require(spec.shape[i] == d, fmt::format("tensor {} dimension {} is {}, expected {}", name, i, spec.shape[i], d));
      ++i;
    }
    return Vec(flat_.begin() + static_cast<std::ptrdiff_t>(spec.offset),
               flat_.begin() + static_cast<std::ptrdiff_t>(spec.offset + spec.count));
  }

 private:
  const models::ParameterLayout& layout_;
  const Vec& flat_;
};

inline void accumulate_grad(Vec& grads, const models::ParameterLayout& layout, const std::string& name, const Vec& g) {
  const models::TensorSpec& spec = layout.at(name);
  require_size(g, spec.count, name.c_str());
  for (size_t i = 0; i < spec.count; ++i) grads[spec.offset + i] += g[i];
}

}  // namespace paxocl::testing::reference
