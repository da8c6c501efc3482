// The smallest layout that fits a device: fewest devices, the global batch kept (its hyper-
// parameters stay those of the experiment; PERCORE_BATCH_SIZE follows). Candidates: data 1,
// fsdp f dividing the global batch (whole sequences per tensor group), tensor t splitting the
// model (tensor_parallel.h), each with the spec's SEQUENCE_PARALLEL, or with it switched on when
// t > 1 (it only lowers memory). Per (t, sequence parallelism) the smallest f that fits is found
// by bisection: above f = 1 (data parallel, no FSDP residency) memory never grows with f (shards
// and the sequences per device shrink, the resident units stay). Pipeline stages split a model by
// depth: every stage axis p > 1 dividing NUM_LAYERS (p x r, under the circular schedule) is tried
// with an fsdp axis f dividing the global batch inside the stages (FSDP inside a stage: the rows
// split as for data, each chunk's optimizer state sharded, device_memory.h; data and tensor 1; not
// when NUM_SUB_BATCHES > 1 was given, which a pipeline refuses), each p on its own (a stage's
// memory need not shrink with p: under 1f1b the first stage holds min(p, m) microbatches), and
// for each p the smallest f that fits, tried in ascending order (the job's rules refuse some f).
// The candidates keep the spec's PIPELINE_SCHEDULE, CIRCULAR_REPEAT r and microbatch settings
// (none given: one sequence per microbatch); one the job's rules refuse (config/pipeline_rules.h:
// microbatches that do not divide its batch, or under the circular schedule are not a multiple of
// p; scheduler/pipeline_step.cpp: a chunk whose flat buffer leaves a device of the fsdp axis an
// empty optimizer shard) is skipped.
// Every candidate keeps CHECKPOINT_POLICY and NUM_SUB_BATCHES where the spec gave them; those left
// open are chosen for the candidate's own sequences per device (memory_choice.h, as make_plan
// chooses them for the layout asked for), so a pipelined spec's 1 sub-batch does not bind the
// layouts without stages, and the result carries the choice (flags() names it).
// Among the fits the fewest devices win, then no stage axis (at equal devices fsdp or tensor
// parallelism beats a pipeline: its communication mostly overlaps compute, while a pipeline idles
// its bubble, (p - 1) / (r m + p - 1) of the step), then the fewer stages (at equal devices a
// shallower pipeline with a larger fsdp axis: a smaller bubble), then no sequence parallelism, then
// the smaller t (less tensor traffic).
// Mesh of a candidate: the spec's devices per process hold the tensor axis first, then fsdp, then
// the stage axis; the rest goes to processes (DCN).
#pragma once

#include <optional>

#include "plan/device_memory.h"
#include "plan/layout_spec.h"

namespace paxocl::plan {

std::optional<LayoutSpec> smallest_fitting_layout(const LayoutSpec& spec, const MemoryLimits& limits);

// The mesh of `fsdp` x `tensor` devices (data 1) for processes of `devices_per_process`.
void assign_mesh(LayoutSpec& spec, int fsdp, int tensor, int devices_per_process);
// The mesh of a pipeline of `stages` x `fsdp` devices (FSDP inside the stages; data and tensor 1).
void assign_stage_mesh(LayoutSpec& spec, int stages, int devices_per_process, int fsdp = 1);

}  // namespace paxocl::plan
