// The smallest layout that fits a device: fewest devices, the global batch kept (its hyper-
// parameters stay those of the experiment; PERCORE_BATCH_SIZE follows). Candidates: data 1,
// fsdp f dividing the global batch (whole sequences per tensor group), tensor t splitting the
// model (tensor_parallel.h), each with the spec's SEQUENCE_PARALLEL, or with it switched on when
// t > 1 (it only lowers memory). Per (t, sequence parallelism) the smallest f that fits is found
// by bisection: above f = 1 (data parallel, no FSDP residency) memory never grows with f (shards
// and the sequences per device shrink, the resident units stay). Among the fits the fewest devices
// win, then no sequence parallelism, then the smaller t (less tensor traffic).
// Mesh of a candidate: the spec's devices per process hold the tensor axis first, then fsdp;
// the rest goes to processes (DCN).
#pragma once

#include <optional>

#include "plan/device_memory.h"
#include "plan/layout_spec.h"

namespace paxocl::plan {

std::optional<LayoutSpec> smallest_fitting_layout(const LayoutSpec& spec, const MemoryLimits& limits);

// The mesh of `fsdp` x `tensor` devices (data 1) for processes of `devices_per_process`.
void assign_mesh(LayoutSpec& spec, int fsdp, int tensor, int devices_per_process);

}  // namespace paxocl::plan
