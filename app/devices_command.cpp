// `pax-ocl devices`: lists every OpenCL device of every process, the host topology and the mesh
// the selected devices form. Accepts the mesh overrides training will accept.
#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "app/agreed_step.h"
#include "app/commands.h"
#include "app/device_check.h"
#include "app/device_report.h"
#include "device/device.h"
#include "device/device_selection.h"
#include "device/host_topology.h"
#include "device/mesh.h"

namespace paxocl::app {

namespace {

const FlagSpec kDevicesFlags[] = {
    kCommonFlags[0],
    kCommonFlags[1],
    {"devices", "auto|gpu|cpu|accelerator|0,1|0-3", "which devices this process uses (env PAX_OCL_DEVICES)"},
    {"json", "", "print the report as JSON instead of tables"},
    {"bind", "auto|none|cores", "bind this process's threads to a slice of the host's cores (default auto)"},
    {"check", "", "also build the kernels and run a verified test kernel on every selected device"},
};
const std::string kDevicesFdl[] = {"ICI_MESH_SHAPE", "DCN_MESH_SHAPE"};

void print_help() {
  std::cout << "Usage: pax-ocl devices [flags]\n\n"
               "Lists every OpenCL platform and device, the host topology (hwloc) and the mesh the selected\n"
               "devices form: ICI_MESH_SHAPE (devices per process) x DCN_MESH_SHAPE (processes), axes\n"
               "[data, fsdp, tensor]. Under mpirun or srun --mpi=pmix, rank 0 prints every process's part.\n\n"
               "Flags:\n";
  std::cout << format_flags(kDevicesFlags);
  std::cout << "  --fdl.ICI_MESH_SHAPE=[d,f,t]  devices per process along each axis (default [N,1,1])\n"
               "  --fdl.DCN_MESH_SHAPE=[d,f,t]  processes along each axis (default [P,1,1])\n";
}

}  // namespace

int run_devices(const CliArgs& args, const collectives::ProcessWorld& world) {
  if (args.flag_bool("help")) {
    if (world.rank() == 0) print_help();
    return kExitOk;
  }
  std::optional<device::MeshShape> ici, dcn;
  device::BindPolicy bind = device::BindPolicy::kAuto;
  std::vector<device::DeviceInfo> all, selected;
  run_agreed(world, [&] {
    args.validate(kDevicesFlags, kDevicesFdl);
    if (auto v = args.fdl("ICI_MESH_SHAPE")) ici = device::parse_mesh_shape(*v, "--fdl.ICI_MESH_SHAPE");
    if (auto v = args.fdl("DCN_MESH_SHAPE")) dcn = device::parse_mesh_shape(*v, "--fdl.DCN_MESH_SHAPE");
    bind = device::parse_bind_policy(args.flag("bind").value_or("auto"));
    (void)args.flag_bool("json");
    (void)args.flag_bool("check");
  });

  // Bind before OpenCL starts, so the runtime's worker threads (PoCL's) inherit the binding.
  device::HostTopology topology;
  const device::BindResult binding = topology.bind_process(world.local_rank(), world.local_size(), bind);
  spdlog::debug("CPU binding: {} ({})", binding.cpus, binding.reason);

  run_agreed(world, [&] {
    all = device::enumerate_devices();
    selected = device::select_devices(all, device::parse_device_selection(device::device_spec_from(args.flag("devices"))));
  });

  const std::vector<int> counts = world.all_gather(static_cast<int>(selected.size()));
  std::optional<device::Mesh> mesh;
  run_agreed(world, [&] {
    for (std::size_t r = 1; r < counts.size(); ++r) {
      if (counts[r] != counts[0]) {
        throw ConfigError(fmt::format("rank 0 selected {} device(s) but rank {} selected {}; every process needs the "
                                      "same number (use --devices or PAX_OCL_DEVICES to choose them)",
                                      counts[0], r, counts[r]));
      }
    }
    mesh.emplace(ici.value_or(device::Mesh::default_shape(counts[0])),
                 dcn.value_or(device::Mesh::default_shape(world.size())), world.size(), counts[0]);
  });

  nlohmann::json mine = process_json(world.rank(), world.local_rank(), world.launcher(), topology.summary(), binding,
                                     all, selected);
  if (args.flag_bool("check")) {
    device::ProgramCache cache;
    nlohmann::json checks = nlohmann::json::array();
    run_agreed(world, [&] {
      for (const device::DeviceInfo& info : selected) {
        device::Device dev(info);
        nlohmann::json check = check_device(cache, dev);
        check["device_index"] = info.index;
        checks.push_back(check);
      }
    });
    mine["checks"] = checks;
  }

  const std::vector<std::string> parts = world.all_gather(mine.dump());
  if (world.rank() != 0) return kExitOk;
  std::vector<nlohmann::json> processes;
  for (const std::string& part : parts) processes.push_back(nlohmann::json::parse(part));
  const nlohmann::json report = job_report(processes, *mesh);
  if (args.flag_bool("json")) {
    std::cout << report.dump(2) << "\n";
  } else {
    std::cout << render_table(report);
  }
  bool all_passed = true;
  for (const auto& p : processes) {
    for (const auto& c : p.value("checks", nlohmann::json::array())) all_passed = all_passed && c["passed"].get<bool>();
  }
  return all_passed ? kExitOk : kExitDevice;
}

}  // namespace paxocl::app
