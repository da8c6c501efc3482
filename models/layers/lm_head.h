// LmHead: logits = y W^T over the padded vocabulary, then the fused softmax cross-entropy
// with per-token weights; the loss is the weighted mean  sum(w * ce) / sum(w)  (0 when sum(w) = 0).
//   y (N, C), W (Vp, C): the Embedding's table (GPT: tied) or the head's own (LLaMA: lm_head),
//   logits (N, Vp), targets, weights (N)
// forward computes the loss and, fused, dlogits; backward returns dy (N, C) and accumulates dW.
// logits() computes logits alone, for decoding. y, logits (then dlogits) and dy are in the
// activation dtype `act`, W is read through Param::compute; the softmax, the losses and dW are float32.
// Vocabulary-parallel (tensor parallelism, VocabShard): W holds rows [begin, begin + Vp) of the
// head (`vocab`, `padded_vocab` are this device's real and total rows); no device holds all logits:
// each computes its rows' max, sum of exponentials and target logit, the tensor group sums those
// (t, N, 3) floats, and each finishes the loss and its dlogits (kernels_cl/vocab_parallel.cl).
// dy is then a partial sum over the group (the model sums it).
#pragma once

#include <vector>

#include "models/layers/layer_context.h"

namespace paxocl::models {

// What forward said of each position (rows b-major): w x cross-entropy, and w where the first
// argmax was the target (else 0). Zero-shot scoring reads them (inputs/zero_shot_scoring.h).
struct PositionScores {
  std::vector<float> losses, correct;
};

// Sums over one batch, in double, for exact weighting across batches.
struct LossStats {
  double weighted_loss = 0;  // sum of w * ce
  double weight = 0;         // sum of w
  double correct = 0;        // sum of w over positions whose argmax is the target
  double mean_loss() const { return weight > 0 ? weighted_loss / weight : 0.0; }
  double accuracy() const { return weight > 0 ? correct / weight : 0.0; }
  LossStats& operator+=(const LossStats& o) {
    weighted_loss += o.weighted_loss;
    weight += o.weight;
    correct += o.correct;
    return *this;
  }
};

// A vocabulary-parallel head's place: its first row's token id, and its part of `parts`.
struct VocabShard {
  std::size_t begin = 0;
  int parts = 1, rank = 0;
};

class LmHead {
 public:
  LmHead(const device::Device& device, device::DType act, Param wte, std::size_t dims, std::size_t vocab,
         std::size_t padded_vocab, std::size_t max_rows, const std::string& name, VocabShard shard = {});

  // The batch's loss sums (added on the host in double, in a fixed order). dlogits are those of
  // gradient_scale x the weighted mean loss (the loss scale; 1 without one). `mean_over` > 0: the
  // mean's denominator is that instead of these rows' weight sum (gradient accumulation: the whole
  // batch's, of which these rows are a sub-batch).
  LossStats forward(LayerContext& ctx, const ActBuffer& y, const std::vector<int>& targets,
                    const std::vector<float>& weights, float gradient_scale = 1.0f, double mean_over = 0.0);
  ActBuffer& backward(LayerContext& ctx);
  const PositionScores& position_scores() const { return positions_; }  // the last forward's
  // Decoding: the logits of `rows` rows of y starting at `first_row`, `stride` rows apart (one per
  // sequence), on the host as float32 (rows, V) without the padding columns.
  std::vector<float> logits(LayerContext& ctx, const ActBuffer& y, std::size_t first_row, std::size_t stride,
                            std::size_t rows);

 private:
  Param wte_;
  std::size_t dims_, vocab_, padded_vocab_;
  VocabShard shard_;
  const ActBuffer* y_ = nullptr;
  ActBuffer logits_;                      // (N, Vp), dlogits after forward
  FloatBuffer losses_, correct_, weights_;  // (N)
  ActBuffer dy_;                          // (N, C)
  device::Buffer<cl_int> targets_;
  FloatBuffer partials_;  // vocabulary-parallel: (parts, N, 3) per-part max, sum of exponentials, target logit
  PositionScores positions_;  // the last forward's, on the host
};

}  // namespace paxocl::models
