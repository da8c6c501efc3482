// The collectives of one training step and the bytes each device sends over ICI (the devices of a
// process) and DCN (between processes), as ring algorithms move them. A collective over a group
// of n = n_ici x n_dcn devices on S bytes runs hierarchically (collectives/: the ICI ring inside a
// process, MPI across processes on each device's chunk):
//   all-gather / reduce-scatter   ICI (n_ici - 1)/n_ici x S        DCN (n_dcn - 1)/n_dcn x S/n_ici
//   all-reduce                    ICI 2 (n_ici - 1)/n_ici x S      DCN 2 (n_dcn - 1)/n_dcn x S/n_ici
// (in all (n - 1)/n x S, resp. 2 (n - 1)/n x S, per device). Per step, with P the device's layout
// and U(-1), U(b) its units in floats, L blocks, N = B x T rows, C the model width, a the
// activation dtype's bytes, k the FSDP block slots:
//   data parallel (fsdp 1, data > 1): all-reduce of every gradient, 4 P bytes: L blocks' as the
//     backward produces them (hidden behind it with OVERLAP_COMMUNICATION), then the rest (exposed);
//   FSDP (fsdp > 1, no stage axis): all-gather of U(-1) once and of each block in the forward,
//     again in the backward for the L - k blocks no longer resident (prefetched: hidden but the
//     first);
//     reduce-scatter of each unit's gradient (hidden but the last), then, with data > 1, an
//     all-reduce of the gradient shard over the data axis;
//   tensor (t > 1): per block 2 all-reduces of (N, C) activations forward and 2 of their gradients
//     backward, the embedding's forward and the LM head's input gradient, a bytes each element,
//     and an all-gather of the cross-entropy's (t, N, 3) float statistics; all exposed (they sit
//     on the critical path). With SEQUENCE_PARALLEL (models/layers/sequence_parallel.h) each of
//     those all-reduces is a reduce-scatter plus an all-gather (the same bytes), the backward
//     all-gathers the norms' outputs again (2 per block: L x 2 more all-gathers of (N, C)), and the
//     norms' replicated gradients are all-reduced in float32: per block 4 C (GPT) or 2 C (LLaMA),
//     and 2 C or C of the final norm.
//   pipeline (stage axis p > 1, scheduler/pipeline_step.h; a tensor axis inside the stages runs the
//     tensor collectives above once per microbatch and chunk, on a microbatch's rows): point-to-point
//     sends of m microbatches of M = N / m rows: each stage but the last sends every microbatch's
//     output (M, C) forward, each but the first its input's gradient (M, C) backward, a bytes each
//     element, over ICI when the neighbouring stage is in the same process (stages s and t are
//     when s / i = t / i, i the stage axis's ICI size), else DCN; counted for the device that sends
//     the most (DCN bytes first, then ICI). Under the circular schedule (CIRCULAR_REPEAT r) every
//     one of a device's r chunks does so as a virtual stage v = c p + s of p r, to v + 1 on device
//     s + 1 and v - 1 on device s - 1, around the ring (device p - 1's chunk c feeds device 0's chunk
//     c + 1): a device sends r m activations and r m gradients, but device p - 1 (r - 1) m
//     activations and device 0 (r - 1) m gradients. One send of each direction is exposed (the
//     fill and the drain wait for it), the others travel while the device computes another
//     microbatch. GPT's tied wte: the first and the last (virtual) stage, on devices 0 and p - 1,
//     send each other its float32 gradient once (ICI when they share a process), exposed; then
//     the data axis all-reduces each chunk's gradients after the last backward (exposed): r
//     operations of the mean chunk's 4 P_v bytes, for the device whose chunks' layouts are the
//     largest (r = 1: the largest stage's). With an fsdp axis f > 1 (FSDP inside the stages: rows
//     split as for data, each chunk's optimizer sharded, device_memory.h) that all-reduce becomes,
//     per chunk, a reduce-scatter of its 4 P_v gradient bytes over the fsdp group
//     (collectives::FsdpCommunicator), an all-reduce of the shard, 4 P_v / f bytes, over the data
//     axis when data > 1, Adam on the shard, and an all-gather of the updated 4 P_v parameter bytes
//     over the fsdp group: r operations of each, all exposed (the same bytes per device as the
//     data-parallel all-reduce, which is a reduce-scatter plus an all-gather).
// Without OVERLAP_COMMUNICATION every collective is exposed.
#pragma once

#include <string>
#include <vector>

#include "models/parameter_layout.h"
#include "plan/layout_spec.h"

namespace paxocl::plan {

enum class CollectiveKind { kAllReduce, kAllGather, kReduceScatter, kSend };  // kSend: point to point

struct Collective {
  std::string name;      // "FSDP all-gather, blocks (forward)"; "PP send, activations (forward)"
  CollectiveKind kind = CollectiveKind::kAllReduce;
  device::MeshAxis axis = device::MeshAxis::kData;  // the group it runs over (data for FSDP's gradient shards)
  double bytes = 0;      // S: one operation's buffer, bytes
  long operations = 0;   // per step
  long exposed = 0;      // operations that no compute hides
  double ici_bytes = 0;  // sent per device per operation (a send: its bytes, over one of the two)
  double dcn_bytes = 0;
};

// Bytes one device sends in a ring collective of `kind` on `bytes` over n_ici x n_dcn devices.
struct LinkBytes {
  double ici = 0, dcn = 0;
};
LinkBytes ring_bytes(CollectiveKind kind, double bytes, int n_ici, int n_dcn);

// A pipeline's point-to-point bytes per device per step (the kSend entries of step_collectives).
LinkBytes point_to_point_bytes(const std::vector<Collective>& collectives);

// The step's collectives for `spec` on the device's parameter `layout` (device_memory.h's
// device_layout; under a stage axis not read: the stages' layouts are built here); none on a
// single device.
std::vector<Collective> step_collectives(const LayoutSpec& spec, const models::ParameterLayout& layout);

}  // namespace paxocl::plan
