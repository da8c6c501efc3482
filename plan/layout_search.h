// The smallest layout that fits a device: fewest devices, the global batch kept (its hyper-
// parameters stay those of the experiment; PERCORE_BATCH_SIZE follows). Candidates: data 1,
// fsdp f dividing the global batch (whole sequences per tensor group), tensor t splitting the
// model (tensor_parallel.h), each with the spec's SEQUENCE_PARALLEL, or with it switched on when
// t > 1 (it only lowers memory). Per (t, sequence parallelism) the smallest f that fits is found
// by bisection: above f = 1 (data parallel, no FSDP residency) memory never grows with f (shards
// and the sequences per device shrink, the resident units stay). Pipeline stages split a model by
// depth: every stage axis p > 1 dividing NUM_LAYERS (p x r, under the circular schedule) is tried
// (data, fsdp and tensor 1, as the job requires; not when NUM_SUB_BATCHES > 1 was given, which a
// pipeline refuses), each on its own: a stage's memory need not shrink with p (under 1f1b the first
// stage holds min(p, m) microbatches). The candidates keep the spec's PIPELINE_SCHEDULE,
// CIRCULAR_REPEAT r and microbatch settings (none given: one sequence per microbatch); one the
// job's rules refuse (config/pipeline_rules.h: microbatches that do not divide its batch, or under
// the circular schedule are not a multiple of p) is skipped.
// Among the fits the fewest devices win, then no stage axis (at equal devices fsdp or tensor
// parallelism beats a pipeline: its communication mostly overlaps compute, while a pipeline idles
// its bubble, (p - 1) / (r m + p - 1) of the step), then no sequence parallelism, then the smaller t
// (less tensor traffic).
// Mesh of a candidate: the spec's devices per process hold the tensor axis first, then fsdp (or
// the stage axis); the rest goes to processes (DCN).
#pragma once

#include <optional>

#include "plan/device_memory.h"
#include "plan/layout_spec.h"

namespace paxocl::plan {

std::optional<LayoutSpec> smallest_fitting_layout(const LayoutSpec& spec, const MemoryLimits& limits);

// The mesh of `fsdp` x `tensor` devices (data 1) for processes of `devices_per_process`.
void assign_mesh(LayoutSpec& spec, int fsdp, int tensor, int devices_per_process);
// The mesh of a pipeline of `stages` devices (data, fsdp and tensor 1).
void assign_stage_mesh(LayoutSpec& spec, int stages, int devices_per_process);

}  // namespace paxocl::plan
