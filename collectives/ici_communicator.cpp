#include "collectives/ici_communicator.h"

#include <chrono>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "collectives/mpi_communicator.h"
#include "common/errors.h"
#include "device/cl_error.h"

namespace paxocl::collectives {

IciCommunicator::IciCommunicator(std::vector<device::Device*> members) : members_(std::move(members)) {
  if (members_.empty()) throw ConfigError("an ICI communicator needs at least one device");
  for (device::Device* d : members_) queues_.push_back(d->make_queue());
  if (members_.size() > 1 && IciRing::possible(members_)) {
    std::vector<device::Queue*> queues;
    for (device::Queue& q : queues_) queues.push_back(&q);
    ring_ = std::make_unique<IciRing>(members_, queues);
  }
  worker_ = std::thread([this] { run(); });
}

// Cancels, does not drain: after an error the queued operations' inputs may never come (or their
// collectives never be joined by a failed peer), so they fail instead of running.
IciCommunicator::~IciCommunicator() {
  std::deque<Job> cancelled;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    cancelled.swap(jobs_);
  }
  wake_.notify_all();
  if (!cancelled.empty()) {
    spdlog::warn("ICI communicator destroyed with {} operation(s) queued; cancelled", cancelled.size());
  }
  for (const Job& job : cancelled) {
    job.pending.fail(std::make_exception_ptr(
        DeviceError(fmt::format("ICI operation '{}' was cancelled: its communicator was destroyed first", job.name))));
  }
  worker_.join();
}

void IciCommunicator::set_tracing(bool on) {
  std::lock_guard lock(mutex_);
  tracing_ = on;
}

std::vector<IciCommunicator::TraceEntry> IciCommunicator::take_trace() {
  std::lock_guard lock(mutex_);
  return std::exchange(trace_, {});
}

void IciCommunicator::run() {
  for (;;) {
    Job job;
    bool traced = false;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, all work done
      job = std::move(jobs_.front());
      jobs_.pop_front();
      traced = tracing_;
    }
    auto start = std::chrono::steady_clock::now();
    try {
      // The events may belong to other members' contexts, which a wait list cannot mix: wait on
      // the host (this is the worker thread; callers do not block). The trace starts after, so
      // it shows the transfer, not the wait for the data.
      for (const device::Event& e : job.wait_for) e.wait();
      start = std::chrono::steady_clock::now();
      job.work();
      job.pending.complete();
    } catch (...) {
      job.pending.fail(std::current_exception());
    }
    if (traced) {
      const auto end = std::chrono::steady_clock::now();
      std::lock_guard lock(mutex_);
      trace_.push_back({job.name, start.time_since_epoch().count(), end.time_since_epoch().count()});
    }
  }
}

void IciCommunicator::read(int member, const device::Buffer<float>& b, std::size_t offset, std::span<float> out) {
  if (out.empty()) return;  // an empty shard (more members than elements)
  device::check_cl(clEnqueueReadBuffer(queues_[static_cast<std::size_t>(member)].get(), b.get(), CL_TRUE,
                                       offset * sizeof(float), out.size_bytes(), out.data(), 0, nullptr, nullptr),
                   "clEnqueueReadBuffer", fmt::format("staging {} floats of ICI member {} to the host", out.size(), member));
}

void IciCommunicator::write(int member, const device::Buffer<float>& b, std::size_t offset, std::span<const float> in) {
  if (in.empty()) return;
  device::check_cl(clEnqueueWriteBuffer(queues_[static_cast<std::size_t>(member)].get(), b.get(), CL_TRUE,
                                        offset * sizeof(float), in.size_bytes(), in.data(), 0, nullptr, nullptr),
                   "clEnqueueWriteBuffer", fmt::format("staging {} floats from the host to ICI member {}", in.size(), member));
}

std::vector<float> IciCommunicator::sum_members(const Buffers& buffers, std::size_t n) {
  std::vector<float> sum(n, 0.0f), part(n);
  for (int m = 0; m < size(); ++m) {  // member order: the same sum on every run
    read(m, buffers[static_cast<std::size_t>(m)], 0, part);
    for (std::size_t i = 0; i < n; ++i) sum[i] += part[i];
  }
  return sum;
}

namespace {
void require(const IciCommunicator::Buffers& buffers, int members, const char* what) {
  if (static_cast<int>(buffers.size()) != members) {
    throw ConfigError(fmt::format("{}: {} buffers for a group of {} devices", what, buffers.size(), members));
  }
}
}  // namespace

Pending IciCommunicator::stage(std::function<void()> work, Events wait_for, std::string name, Pending pending) {
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(Job{std::move(work), std::move(wait_for), pending, std::move(name)});
  }
  wake_.notify_all();
  return pending;
}

Pending IciCommunicator::all_reduce(Buffers buffers, std::size_t n, Events wait_for, HostStage across, Pending pending) {
  require(buffers, size(), "all_reduce");
  return stage([this, buffers = std::move(buffers), n, across = std::move(across)] {
    if (ring_) {  // reduce-scatter in the ring; the chunks through the host stage; all-gather in the ring
      ring_->reduce_scatter_in_place(buffers, n);
      if (across) {
        std::vector<float> sum(n);
        for (int m = 0; m < size(); ++m) {
          const auto [b, e] = MpiCommunicator::shard_range(n, size(), m);
          read(m, buffers[static_cast<std::size_t>(m)], b, std::span<float>(sum).subspan(b, e - b));
        }
        across(sum);
        for (int m = 0; m < size(); ++m) {
          const auto [b, e] = MpiCommunicator::shard_range(n, size(), m);
          write(m, buffers[static_cast<std::size_t>(m)], b, std::span<const float>(sum).subspan(b, e - b));
        }
      }
      ring_->all_gather_in_place(buffers, n);
      return;
    }
    std::vector<float> sum = sum_members(buffers, n);
    if (across) across(sum);
    for (int m = 0; m < size(); ++m) write(m, buffers[static_cast<std::size_t>(m)], 0, sum);
  }, std::move(wait_for), "all_reduce", std::move(pending));
}

Pending IciCommunicator::all_gather(Buffers shards, Buffers outputs, std::size_t n, Events wait_for, Pending pending) {
  require(shards, size(), "all_gather");
  require(outputs, size(), "all_gather");
  return stage([this, shards = std::move(shards), outputs = std::move(outputs), n] {
    if (ring_) {
      for (int m = 0; m < size(); ++m) {
        const auto [b, e] = MpiCommunicator::shard_range(n, size(), m);
        ring_->copy(m, shards[static_cast<std::size_t>(m)], 0, outputs[static_cast<std::size_t>(m)], b, e - b);
      }
      ring_->all_gather_in_place(outputs, n);
      return;
    }
    std::vector<float> all(n);
    for (int m = 0; m < size(); ++m) {
      const auto [b, e] = MpiCommunicator::shard_range(n, size(), m);
      read(m, shards[static_cast<std::size_t>(m)], 0, std::span<float>(all).subspan(b, e - b));
    }
    for (int m = 0; m < size(); ++m) write(m, outputs[static_cast<std::size_t>(m)], 0, all);
  }, std::move(wait_for), "all_gather", std::move(pending));
}

Pending IciCommunicator::reduce_scatter(Buffers inputs, Buffers shards, std::size_t n, Events wait_for, Pending pending,
                                       Inputs use) {
  require(inputs, size(), "reduce_scatter");
  require(shards, size(), "reduce_scatter");
  return stage([this, inputs = std::move(inputs), shards = std::move(shards), n, use] {
    if (ring_) {  // in place on the inputs if they may be consumed, else on copies of them
      Buffers work = inputs;
      if (use == Inputs::kKept) {
        work = ring_->scratch(n);
        for (int m = 0; m < size(); ++m) {
          ring_->copy(m, inputs[static_cast<std::size_t>(m)], 0, work[static_cast<std::size_t>(m)], 0, n);
        }
      }
      ring_->reduce_scatter_in_place(work, n);
      for (int m = 0; m < size(); ++m) {
        const auto [b, e] = MpiCommunicator::shard_range(n, size(), m);
        ring_->copy(m, work[static_cast<std::size_t>(m)], b, shards[static_cast<std::size_t>(m)], 0, e - b);
      }
      return;
    }
    const std::vector<float> sum = sum_members(inputs, n);
    for (int m = 0; m < size(); ++m) {
      const auto [b, e] = MpiCommunicator::shard_range(n, size(), m);
      write(m, shards[static_cast<std::size_t>(m)], 0, std::span<const float>(sum).subspan(b, e - b));
    }
  }, std::move(wait_for), "reduce_scatter", std::move(pending));
}

Pending IciCommunicator::broadcast(Buffers buffers, std::size_t n, int root, Events wait_for) {
  require(buffers, size(), "broadcast");
  if (root < 0 || root >= size()) throw ConfigError(fmt::format("broadcast root {} is not in a group of {}", root, size()));
  return stage([this, buffers = std::move(buffers), n, root] {
    if (ring_) {
      ring_->broadcast(buffers, n, root);
      return;
    }
    std::vector<float> data(n);
    read(root, buffers[static_cast<std::size_t>(root)], 0, data);
    for (int m = 0; m < size(); ++m) {
      if (m != root) write(m, buffers[static_cast<std::size_t>(m)], 0, data);
    }
  }, std::move(wait_for), "broadcast");
}

}  // namespace paxocl::collectives
