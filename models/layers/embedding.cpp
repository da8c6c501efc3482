#include "models/layers/embedding.h"

#include <algorithm>
#include <numeric>


namespace paxocl::models {

Embedding::Embedding(const device::Device& device, device::DType act, Param wte, std::optional<Param> wpe,
                     std::size_t dims, std::size_t max_rows, const std::string& name, VocabRange vocab)
    : wte_(std::move(wte)),
      wpe_(std::move(wpe)),
      zero_row_(make_buffer(device, act, wpe_ ? 1 : dims, name + ".zero_row")),
      dims_(dims),
      vocab_(vocab),
      ids_(device.context(), max_rows, name + ".ids"),
      tokens_(device.context(), max_rows, name + ".tokens"),
      starts_(device.context(), max_rows + 1, name + ".starts"),
      positions_(device.context(), max_rows, name + ".positions"),
      x_(make_buffer(device, act, max_rows * dims, name + ".x")) {}

ActBuffer& Embedding::forward(LayerContext& ctx, const std::vector<int>& ids, std::size_t first_position) {
  const std::size_t N = ctx.rows();
  // CSR of positions grouped by token (local row: id - vocab begin; only this device's tokens):
  // positions sorted by (token, position).
  auto mine = [&](int id) { return static_cast<std::size_t>(id) - vocab_.begin < vocab_.rows; };
  std::vector<cl_int> positions;
  positions.reserve(N);
  for (std::size_t p = 0; p < N; ++p) {
    if (mine(ids[p])) positions.push_back(static_cast<cl_int>(p));
  }
  std::stable_sort(positions.begin(), positions.end(), [&](int a, int b) { return ids[a] < ids[b]; });
  std::vector<cl_int> tokens, starts;
  for (std::size_t p = 0; p < positions.size(); ++p) {
    if (p == 0 || ids[positions[p]] != ids[positions[p - 1]]) {
      tokens.push_back(static_cast<cl_int>(static_cast<std::size_t>(ids[positions[p]]) - vocab_.begin));
      starts.push_back(static_cast<cl_int>(p));
    }
  }
  starts.push_back(static_cast<cl_int>(positions.size()));
  unique_tokens_ = tokens.size();
  auto& q = ctx.device.queue();
  q.write(ids_, std::span<const cl_int>(ids.data(), N));
  q.write(starts_, std::span<const cl_int>(starts));
  if (!tokens.empty()) {  // a vocabulary part may hold none of the batch's tokens
    q.write(tokens_, std::span<const cl_int>(tokens));
    q.write(positions_, std::span<const cl_int>(positions));
  }
  // Without positions every row adds the one zero row.
  if (!wpe_ && !zero_row_written_) {
    q.zero(zero_row_.get(), zero_row_.bytes());
    zero_row_written_ = true;
  }
  ctx.kernels.embedding.forward(x_, ids_, wte_.compute, wpe_ ? wpe_->compute : zero_row_, ctx.batch, ctx.seq_len,
                                dims_, first_position, wpe_.has_value(), vocab_.begin, vocab_.rows);
  return x_;
}

void Embedding::backward(LayerContext& ctx, const ActBuffer& dx) {
  if (wpe_) ctx.kernels.embedding.backward_wpe(wpe_->grad, dx, ctx.batch, ctx.seq_len, dims_);
  if (unique_tokens_ > 0) {
    ctx.kernels.embedding.backward_wte(wte_.grad, dx, tokens_, starts_, positions_, unique_tokens_, dims_);
  }
}

}  // namespace paxocl::models
