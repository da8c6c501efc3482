// The inventory `pax-ocl devices` prints: per process its host topology, CPU binding and OpenCL
// devices, then the mesh over the selected devices with every device's coordinates and axis
// groups. Built as JSON (what --json prints); the table is rendered from the same JSON, so the two
// never disagree.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "device/device_info.h"
#include "device/host_topology.h"
#include "device/mesh.h"

namespace paxocl::app {


nlohmann::json device_json(const device::DeviceInfo& info, bool selected);

// One process's part of the report.
nlohmann::json process_json(int rank, int local_rank, const std::string& launcher,
                            const device::TopologySummary& topology, const device::BindResult& binding,
                            const std::vector<device::DeviceInfo>& all_devices,
                            const std::vector<device::DeviceInfo>& selected);

// The whole report from every process's part (in rank order) and the mesh.
nlohmann::json job_report(const std::vector<nlohmann::json>& processes, const device::Mesh& mesh);

std::string render_table(const nlohmann::json& report);

}  // namespace paxocl::app
