// HostTopology: this host's processor layout from hwloc (packages, NUMA nodes, cores, hardware
// threads) and the CPU binding of this process. When several pax-ocl processes share a host, each
// binds its threads (its own and the OpenCL runtime's, e.g. PoCL's workers) to a disjoint slice of
// the cores, so they do not fight over the same ones.
#pragma once

#include <memory>
#include <string>

namespace paxocl::device {

struct TopologySummary {
  std::string hostname;
  std::string cpu_model;  // hwloc's CPUModel of the first package, "" when unknown
  int packages = 0;
  int numa_nodes = 0;
  int cores = 0;
  int hardware_threads = 0;  // hwloc PUs
};

enum class BindPolicy {
  kAuto,   // several processes on the host: keep a launcher's binding, else bind to a core slice;
           // one process: use every core (undoing mpirun's default one-core binding)
  kNone,   // leave the binding as it is
  kCores,  // always bind to this process's slice of cores
};
BindPolicy parse_bind_policy(std::string_view text);  // "auto" | "none" | "cores"; ConfigError otherwise

struct BindResult {
  bool changed = false;    // this call bound the process
  std::string cpus;        // the process's CPU set afterwards, as a list ("0-1", "2,3")
  std::string reason;      // why, in a few words ("single process on host", "bound by launcher", ...)
};

class HostTopology {
 public:
  HostTopology();  // loads the topology (I/O devices excluded: hwloc skips CPU OpenCL devices anyway)
  ~HostTopology();
  HostTopology(const HostTopology&) = delete;
  HostTopology& operator=(const HostTopology&) = delete;

  TopologySummary summary() const;
  std::string current_binding() const;  // CPU list of this process ("0-1")

  // Binds all threads of this process to core slice `local_rank` of `local_size` (cores are split
  // evenly; with more processes than cores, slices wrap around).
  BindResult bind_process(int local_rank, int local_size, BindPolicy policy);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace paxocl::device
