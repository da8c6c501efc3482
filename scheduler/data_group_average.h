// average_data_groups: the data-parallel gradient averaging of the step programs that keep their
// data groups as GradientAveragers (TensorParallelStep: a group per tensor index; PipelineStep: a
// group per stage chunk). Members are the program's devices or stage entries; group_of[i] is
// member i's averager (-1: none, it has no replicas). Each group averages its members' gradients,
// in member order, once every member's backward is queued (its event).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "collectives/gradient_averager.h"
#include "collectives/pending.h"
#include "device/buffer.h"
#include "device/event.h"

namespace paxocl::scheduler {

struct MemberGradients {
  device::Buffer<float> buffer;  // the member's flat gradients (a handle)
  std::size_t count = 0;         // elements averaged
  device::Event backward_done;   // a marker on the member's queue after its backward, flushed
};

// One pending reduction per averager; the caller waits (with any other collectives of the step).
std::vector<collectives::Pending> average_data_groups(
    const std::vector<std::unique_ptr<collectives::GradientAverager>>& averagers, const std::vector<int>& group_of,
    const std::function<MemberGradients(std::size_t member)>& member);

}  // namespace paxocl::scheduler
