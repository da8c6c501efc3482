#include "device/host_topology.h"

#include <hwloc.h>
#include <unistd.h>

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::device {

namespace {

// RAII over hwloc bitmaps.
struct Bitmap {
  Bitmap() : map(hwloc_bitmap_alloc()) {}
  explicit Bitmap(hwloc_const_bitmap_t other) : map(hwloc_bitmap_dup(other)) {}
  ~Bitmap() { hwloc_bitmap_free(map); }
  Bitmap(const Bitmap&) = delete;
  Bitmap& operator=(const Bitmap&) = delete;
  std::string list() const {
    char* text = nullptr;
    hwloc_bitmap_list_asprintf(&text, map);
    std::string s = text ? text : "";
    free(text);
    return s;
  }
  hwloc_bitmap_t map;
};

}  // namespace

struct HostTopology::Impl {
  hwloc_topology_t topology = nullptr;
};

BindPolicy parse_bind_policy(std::string_view text) {
  if (text == "auto") return BindPolicy::kAuto;
  if (text == "none") return BindPolicy::kNone;
  if (text == "cores") return BindPolicy::kCores;
  throw ConfigError(fmt::format("--bind={}: unknown policy; use auto, none or cores", text));
}

HostTopology::HostTopology() : impl_(std::make_unique<Impl>()) {
  if (hwloc_topology_init(&impl_->topology) != 0) throw DeviceError("hwloc_topology_init failed: out of memory");
  hwloc_topology_set_io_types_filter(impl_->topology, HWLOC_TYPE_FILTER_KEEP_NONE);
  if (hwloc_topology_load(impl_->topology) != 0) {
    hwloc_topology_destroy(impl_->topology);
    throw DeviceError("hwloc could not read this host's topology (hwloc_topology_load failed)");
  }
}

HostTopology::~HostTopology() { hwloc_topology_destroy(impl_->topology); }

TopologySummary HostTopology::summary() const {
  hwloc_topology_t t = impl_->topology;
  TopologySummary s;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  s.hostname = host;
  s.packages = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
  s.numa_nodes = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
  s.cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
  s.hardware_threads = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
  if (hwloc_obj_t package = hwloc_get_obj_by_type(t, HWLOC_OBJ_PACKAGE, 0)) {
    if (const char* model = hwloc_obj_get_info_by_name(package, "CPUModel")) s.cpu_model = model;
  }
  return s;
}

std::string HostTopology::current_binding() const {
  Bitmap set;
  if (hwloc_get_cpubind(impl_->topology, set.map, HWLOC_CPUBIND_PROCESS) != 0) return "unknown";
  return set.list();
}

BindResult HostTopology::bind_process(int local_rank, int local_size, BindPolicy policy) {
  hwloc_topology_t t = impl_->topology;
  hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(t);
  BindResult result;
  Bitmap current;
  const bool known = hwloc_get_cpubind(t, current.map, HWLOC_CPUBIND_PROCESS) == 0;
  const bool narrowed = known && !hwloc_bitmap_isequal(current.map, allowed);
  if (policy == BindPolicy::kNone) {
    result.reason = "binding disabled (--bind=none)";
  } else if (policy == BindPolicy::kAuto && local_size <= 1 && narrowed) {
    // mpirun binds each rank to one core by default; a lone process per host wants them all.
    if (hwloc_set_cpubind(t, allowed, HWLOC_CPUBIND_PROCESS) == 0) {
      result.changed = true;
      result.reason = "single process on host: widened the launcher's binding to all cores";
    } else {
      result.reason = "single process on host, bound by launcher (could not widen)";
    }
  } else if (policy == BindPolicy::kAuto && local_size <= 1) {
    result.reason = "single process on host";
  } else if (policy == BindPolicy::kAuto && narrowed) {
    result.reason = "bound by launcher";  // respect mpirun --bind-to / srun --cpu-bind
  } else {
    const int cores = std::max(1, hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE));
    const int per_rank = std::max(1, cores / std::max(1, local_size));
    Bitmap slice;
    for (int i = 0; i < per_rank; ++i) {
      const int core_index = (local_rank * per_rank + i) % cores;
      if (hwloc_obj_t core = hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, static_cast<unsigned>(core_index))) {
        hwloc_bitmap_or(slice.map, slice.map, core->cpuset);
      }
    }
    hwloc_bitmap_and(slice.map, slice.map, allowed);
    if (hwloc_bitmap_iszero(slice.map)) {
      result.reason = "no allowed cores to bind to";
    } else if (hwloc_set_cpubind(t, slice.map, HWLOC_CPUBIND_PROCESS) != 0) {
      result.reason = "binding refused by the OS";
    } else {
      result.changed = true;
      result.reason = fmt::format("core slice {} of {}", local_rank, local_size);
    }
  }
  result.cpus = current_binding();
  return result;
}

}  // namespace paxocl::device
