#include "plan/communication.h"

#include <algorithm>
#include <set>

#include "models/stage_split.h"
#include "plan/device_memory.h"
#include "plan/tensor_parallel.h"

namespace paxocl::plan {

using device::MeshAxis;

LinkBytes ring_bytes(CollectiveKind kind, double bytes, int n_ici, int n_dcn) {
  const double passes = kind == CollectiveKind::kAllReduce ? 2.0 : 1.0;
  return LinkBytes{passes * (n_ici - 1) / n_ici * bytes, passes * (n_dcn - 1) / n_dcn * bytes / n_ici};
}

LinkBytes point_to_point_bytes(const std::vector<Collective>& collectives) {
  LinkBytes sum;
  for (const Collective& c : collectives) {
    if (c.kind != CollectiveKind::kSend) continue;
    sum.ici += c.ici_bytes * static_cast<double>(c.operations);
    sum.dcn += c.dcn_bytes * static_cast<double>(c.operations);
  }
  return sum;
}

namespace {

// The floats of the tensors outside the blocks that both a pipeline's first and last (virtual)
// stage hold (GPT's tied wte; none for LLaMA's separate head): the gradient the two ends exchange.
double tied_floats(const LayoutSpec& spec) {
  const std::vector<models::TensorDef> defs = tensor_rank_defs(spec.model, 1);
  const int L = spec.model.num_blocks(), v = spec.virtual_stages();
  std::set<std::string> first;
  for (const models::TensorDef& d : models::stage_tensor_defs(defs, models::stage_span(L, v, 0))) first.insert(d.name);
  double floats = 0;
  for (const models::TensorDef& d : models::stage_tensor_defs(defs, models::stage_span(L, v, v - 1))) {
    if (d.block >= 0 || first.count(d.name) == 0) continue;
    double n = 1;
    for (const std::int64_t e : d.shape) n *= static_cast<double>(e);
    floats += n;
  }
  return floats;
}

// A pipeline's sends (communication.h), for the device that sends the most; `send` adds one entry.
template <typename Send>
void pipeline_sends(const LayoutSpec& spec, Send& send) {
  const int p = spec.stages(), ici = spec.ici_along(MeshAxis::kStage);
  const double width = spec.model.visit([](const auto& c) { return static_cast<double>(c.model_dims); });
  const double message = static_cast<double>(spec.microbatch_sequences()) * spec.model.max_seq_len() * width *
                         static_cast<double>(device::dtype_size(spec.fprop));
  const long m = spec.microbatches(), r = spec.repeat;
  // Every chunk of device s sends forward to device s + 1 and backward to s - 1, around the ring
  // (virtual stage v to v +- 1); the last virtual stage (device p - 1's last chunk) sends no
  // activation, the first (device 0's first) no gradient.
  auto next = [&](int s) { return (s + 1) % p; };
  auto previous = [&](int s) { return (s + p - 1) % p; };
  auto forwards = [&](int s) { return m * (r - (s == p - 1 ? 1 : 0)); };
  auto backwards = [&](int s) { return m * (r - (s == 0 ? 1 : 0)); };
  auto over_ici = [&](int s, int t) { return s / ici == t / ici; };  // stages s, t share a process
  int busiest = 0;
  std::pair<double, double> most{-1, -1};  // (DCN bytes, ICI bytes) the device sends
  for (int s = 0; s < p; ++s) {
    std::pair<double, double> sent{0, 0};
    (over_ici(s, next(s)) ? sent.second : sent.first) += static_cast<double>(forwards(s)) * message;
    (over_ici(s, previous(s)) ? sent.second : sent.first) += static_cast<double>(backwards(s)) * message;
    if (sent > most) {
      most = sent;
      busiest = s;
    }
  }
  if (forwards(busiest) > 0) {
    send("PP send, activations (forward)", message, forwards(busiest), over_ici(busiest, next(busiest)));
  }
  if (backwards(busiest) > 0) {
    send("PP send, activation gradients (backward)", message, backwards(busiest), over_ici(busiest, previous(busiest)));
  }
  const double tied = tied_floats(spec) * sizeof(float);
  if (tied > 0) send("PP send, tied embedding gradient (first <-> last stage)", tied, 1, over_ici(0, p - 1));
}

// The floats of the pipeline device whose chunks' layouts hold the most.
double most_device_floats(const LayoutSpec& spec) {
  std::size_t most = 0;
  for (int s = 0; s < spec.stages(); ++s) {
    std::size_t floats = 0;
    for (const models::ParameterLayout& l : device_layouts(spec, s)) floats += l.total();
    most = std::max(most, floats);
  }
  return static_cast<double>(most);
}

// Rematerialization under tensor parallelism: the collectives of the forward that each recomputed
// block (models::recomputes_block: each stage's or chunk's last is not) runs again (TransformerBlock::recompute):
// the attention output's sum when out_proj is recomputed for the residual; under sequence
// parallelism the gathers of the norms' outputs the recomputed mixer and MLP read, and the
// attention output's reduce-scatter for the residual.
template <typename Add>
void recompute_collectives(const LayoutSpec& spec, double activation, Add& add) {
  if (!models::rematerializes(spec.checkpoint_policy)) return;
  const bool sp = spec.sequence_parallel;
  const models::SavedSites saved = models::saved_sites(spec.checkpoint_policy, sp);
  using models::BlockSite;
  const bool residual = !saved.has(BlockSite::kNorm2);
  long gathers = 0, scatters = 0, sums = 0;
  for (int l = 0; l < spec.model.num_blocks(); ++l) {
    if (!models::recomputes_block(l, spec.model.num_blocks(), spec.stages() * spec.repeat)) continue;
    const bool attention = !spec.model.is_gpt() || spec.model.gpt().block_kind(l) == models::BlockKind::kAttention;
    if (sp) {
      if (attention ? !saved.has(BlockSite::kQkvProj) : !saved.has(BlockSite::kSsm)) ++gathers;
      if (residual && attention) ++scatters;
      if (!saved.has(BlockSite::kFfn1)) ++gathers;
    } else if (attention && residual && !saved.has(BlockSite::kOutProj)) {
      ++sums;
    }
  }
  add("TP all-gather, recomputed norm outputs", CollectiveKind::kAllGather, MeshAxis::kTensor, activation, gathers, gathers);
  add("TP reduce-scatter, recomputed attention outputs", CollectiveKind::kReduceScatter, MeshAxis::kTensor, activation,
      scatters, scatters);
  add("TP all-reduce, recomputed attention outputs", CollectiveKind::kAllReduce, MeshAxis::kTensor, activation, sums, sums);
}

}  // namespace

std::vector<Collective> step_collectives(const LayoutSpec& spec, const models::ParameterLayout& layout) {
  std::vector<Collective> out;
  auto add = [&](std::string name, CollectiveKind kind, MeshAxis axis, double bytes, long operations, long exposed) {
    if (operations <= 0 || spec.along(axis) <= 1 || bytes <= 0) return;
    const LinkBytes b = ring_bytes(kind, bytes, spec.ici_along(axis), spec.dcn_along(axis));
    out.push_back({std::move(name), kind, axis, bytes, operations, spec.overlap ? std::min(exposed, operations) : operations,
                   b.ici, b.dcn});
  };
  const long L = layout.num_blocks();  // the device's blocks: a stage's under a stage axis
  double blocks = 0;  // every block's unit, so a hybrid's differing blocks count as they are
  for (int b = 0; b < L; ++b) blocks += static_cast<double>(layout.unit(b).size);
  const double rest = static_cast<double>(layout.unit(-1).size) * sizeof(float),
               block = blocks / static_cast<double>(L) * sizeof(float);  // the mean block
  const int f = spec.along(MeshAxis::kFsdp);
  // Passes per step: FSDP's program and the tensor collectives run in each. A pipeline stage runs
  // one per microbatch and chunk, each over a microbatch's rows.
  const long k = spec.stages() > 1 ? static_cast<long>(spec.microbatches()) * spec.repeat : spec.sub_batches;
  const long pass_sequences = spec.stages() > 1 ? spec.microbatch_sequences() : spec.group_sequences() / k;
  if (spec.stages() > 1) {
    auto send = [&](std::string name, double bytes, long operations, bool ici) {
      out.push_back({std::move(name), CollectiveKind::kSend, MeshAxis::kStage, bytes, operations,
                     spec.overlap ? std::min(1L, operations) : operations, ici ? bytes : 0.0, ici ? 0.0 : bytes});
    };
    pipeline_sends(spec, send);
    // Once the last backward is done, each of the device's r chunks (the mean chunk's bytes):
    const double chunk = most_device_floats(spec) * sizeof(float) / spec.repeat;
    const long r = spec.repeat;
    if (f > 1) {
      // FSDP inside the stage: the chunk's gradient reduce-scattered into the optimizer shards (and
      // each shard averaged over the data axis), Adam on the shard, the updated shards all-gathered.
      add("FSDP reduce-scatter, the stage's gradients", CollectiveKind::kReduceScatter, MeshAxis::kFsdp, chunk, r, r);
      add("DP all-reduce of FSDP gradient shards, the stage's", CollectiveKind::kAllReduce, MeshAxis::kData, chunk / f,
          r, r);
      add("FSDP all-gather, the stage's updated parameters", CollectiveKind::kAllGather, MeshAxis::kFsdp, chunk, r, r);
    } else {
      // PipelineStep averages each chunk's whole gradient buffer.
      add("DP all-reduce, the stage's gradients", CollectiveKind::kAllReduce, MeshAxis::kData, chunk, r, r);
    }
  } else if (f == 1) {
    add("DP all-reduce, block gradients", CollectiveKind::kAllReduce, MeshAxis::kData, block, L, 0);
    add("DP all-reduce, other gradients", CollectiveKind::kAllReduce, MeshAxis::kData, rest, 1, 1);
  } else {
    const long slots = 1 + (spec.overlap ? std::min<long>(spec.fsdp_prefetch_depth, L - 1) : 0);
    const bool prefetch = spec.fsdp_prefetch_depth > 0;
    add("FSDP all-gather, unit outside the blocks", CollectiveKind::kAllGather, MeshAxis::kFsdp, rest, k, k);
    add("FSDP all-gather, blocks (forward)", CollectiveKind::kAllGather, MeshAxis::kFsdp, block, k * L,
        k * (prefetch ? 1 : L));
    add("FSDP all-gather, blocks (backward)", CollectiveKind::kAllGather, MeshAxis::kFsdp, block, k * (L - slots),
        k * (prefetch ? 0 : L - slots));
    add("FSDP reduce-scatter, blocks", CollectiveKind::kReduceScatter, MeshAxis::kFsdp, block, k * L, k);
    add("FSDP reduce-scatter, unit outside the blocks", CollectiveKind::kReduceScatter, MeshAxis::kFsdp, rest, k, k);
    add("DP all-reduce of FSDP gradient shards, blocks", CollectiveKind::kAllReduce, MeshAxis::kData, block / f, L, 1);
    add("DP all-reduce of FSDP gradient shards, other", CollectiveKind::kAllReduce, MeshAxis::kData, rest / f, 1, 1);
  }
  const int t = spec.along(MeshAxis::kTensor);
  if (t > 1) {
    // Every pass (sub-batch) runs the tensor collectives on its rows.
    auto per_pass = [&](std::string name, CollectiveKind kind, MeshAxis axis, double bytes, long operations, long exposed) {
      add(std::move(name), kind, axis, bytes, k * operations, k * exposed);
    };
    // The tensor collectives of a stage's chunk are counted as a whole model's (with the embedding's
    // and the head's sums): an upper bound for a stage.
    const double rows = static_cast<double>(pass_sequences) * spec.model.max_seq_len();  // a pass's
    const double width = spec.model.visit([](const auto& c) { return static_cast<double>(c.model_dims); });
    const double activation = rows * width * static_cast<double>(device::dtype_size(spec.fprop));
    // Partial sums per pass: each attention block's two (attention, MLP), an SSM block's one (the
    // SSM runs whole on every rank), the embedding's (forward) or the LM head's (backward).
    const long ssm_blocks = spec.model.is_gpt() ? spec.model.gpt().ssm_blocks() : 0;
    const long sums = 2 * L - ssm_blocks + 1;
    if (spec.sequence_parallel) {
      const bool gpt = spec.model.is_gpt();  // LayerNorm: scale and bias; RMSNorm: scale
      const double norm = (gpt ? 2.0 : 1.0) * width * sizeof(float);
      per_pass("TP reduce-scatter, activations (forward)", CollectiveKind::kReduceScatter, MeshAxis::kTensor, activation,
          sums, sums);
      per_pass("TP all-gather, activations (forward)", CollectiveKind::kAllGather, MeshAxis::kTensor, activation, 2 * L + 1,
          2 * L + 1);
      per_pass("TP reduce-scatter, activation gradients (backward)", CollectiveKind::kReduceScatter, MeshAxis::kTensor,
          activation, sums, sums);
      per_pass("TP all-gather, gradients and norm outputs (backward)", CollectiveKind::kAllGather,
          MeshAxis::kTensor, activation, 4 * L + 1, 4 * L + 1);
      per_pass("TP all-reduce, the blocks' norm gradients", CollectiveKind::kAllReduce, MeshAxis::kTensor, 2 * norm, L, L);
      per_pass("TP all-reduce, the final norm's gradients", CollectiveKind::kAllReduce, MeshAxis::kTensor, norm, 1, 1);
    } else {
      per_pass("TP all-reduce, activations (forward)", CollectiveKind::kAllReduce, MeshAxis::kTensor, activation, sums, sums);
      per_pass("TP all-reduce, activation gradients (backward)", CollectiveKind::kAllReduce, MeshAxis::kTensor, activation,
          sums, sums);
    }
    recompute_collectives(spec, activation, per_pass);
    per_pass("TP all-gather, cross-entropy row statistics", CollectiveKind::kAllGather, MeshAxis::kTensor,
        static_cast<double>(t) * rows * 3 * sizeof(float), 1, 1);
  }
  return out;
}

}  // namespace paxocl::plan
