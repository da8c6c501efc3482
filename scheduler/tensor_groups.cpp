#include "scheduler/tensor_groups.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>

#include <fmt/format.h>

#include "scheduler/device_threads.h"

namespace paxocl::scheduler {

using device::MeshAxis;

TensorGroups::TensorGroups(const device::Mesh& mesh, const collectives::ProcessWorld& world,
                           std::vector<device::Device*> devices, std::vector<kernels::DeviceRuntime*> runtimes)
    : size_(mesh.size(MeshAxis::kTensor)) {
  const int rank = world.rank();
  std::vector<std::vector<int>> group_devices;  // local indices of each group's members, in rank order
  for (int d = 0; d < static_cast<int>(devices.size()); ++d) {
    const int id = mesh.device_id(rank, d);
    const device::MeshCoords c = mesh.coords(id);
    const std::vector<int> ici = mesh.ici_group(id, MeshAxis::kTensor);
    Place p;
    p.tensor_rank = c[static_cast<std::size_t>(MeshAxis::kTensor)];
    p.member = static_cast<int>(std::find(ici.begin(), ici.end(), id) - ici.begin());
    p.first_replica = c[static_cast<std::size_t>(MeshAxis::kData)] == 0;
    const int first = mesh.local_index_of(ici.front());
    auto g = std::find_if(group_devices.begin(), group_devices.end(), [&](const auto& v) { return v.front() == first; });
    if (g == group_devices.end()) {
      g = group_devices.insert(group_devices.end(), std::vector<int>{});
      for (int member : ici) g->push_back(mesh.local_index_of(member));
    }
    p.group = static_cast<int>(g - group_devices.begin());
    places_.push_back(p);
  }
  const std::vector<int> processes = mesh.dcn_processes(rank, MeshAxis::kTensor);
  for (const auto& g : group_devices) {
    std::vector<device::Device*> members;
    for (int d : g) members.push_back(devices[static_cast<std::size_t>(d)]);
    comms_.push_back(std::make_unique<collectives::TensorCommunicator>(members, world, processes));
  }
  for (std::size_t d = 0; d < devices.size(); ++d) {
    const Place& p = places_[d];
    members_.push_back(std::make_unique<TensorGroupMember>(*comms_[static_cast<std::size_t>(p.group)], p.member,
                                                           p.tensor_rank, size_, *runtimes[d]));
  }
  attached_.assign(devices.size(), {});
  if (world.size() > 1) {
    std::vector<int> all(static_cast<std::size_t>(world.size()));
    std::iota(all.begin(), all.end(), 0);
    job_ = std::make_unique<collectives::MpiCommunicator>(world, all);
  }
}

TensorGroups::~TensorGroups() {
  for (const auto& instances : attached_) {
    for (models::Model* m : instances) m->set_tensor_group(nullptr);
  }
}

void TensorGroups::attach(std::size_t d, models::Model& model) {
  model.set_tensor_group(members_.at(d).get());
  attached_.at(d).push_back(&model);
}

void TensorGroups::run_threads(std::size_t count, const std::function<void(std::size_t)>& work) {
  run_on_threads(count, work, [&](std::exception_ptr error) { abort(error); });
}

void TensorGroups::abort(std::exception_ptr error) {
  for (auto& c : comms_) c->abort(error);
}

void TensorGroups::sum_over_job(std::vector<float>& image) {
  if (job_) job_->all_reduce(image).wait();
}

void TensorGroups::set_tracing(bool on) {
  for (auto& c : comms_) c->ici().set_tracing(on);
}

void TensorGroups::append_trace(std::vector<TraceEvent>& events, long step) {
  for (std::size_t g = 0; g < comms_.size(); ++g) {
    collectives::IciCommunicator& ici = comms_[g]->ici();
    ici.set_tracing(false);
    for (const auto& c : ici.take_trace()) {
      events.push_back({fmt::format("tensor group {} {} (step {})", g, c.name, step), kCommunicationTrack, c.start_ns, c.end_ns});
    }
  }
}

}  // namespace paxocl::scheduler
