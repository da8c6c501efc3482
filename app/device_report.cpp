#include "app/device_report.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "device/buffer.h"

namespace paxocl::app {

using nlohmann::json;

json device_json(const device::DeviceInfo& d, bool selected) {
  return json{{"index", d.index},
              {"selected", selected},
              {"platform_index", d.platform_index},
              {"platform", d.platform_name},
              {"platform_version", d.platform_version},
              {"name", d.name},
              {"vendor", d.vendor},
              {"kind", device::to_string(d.kind)},
              {"driver_version", d.driver_version},
              {"opencl_version", d.opencl_version},
              {"opencl_c_version", d.opencl_c_version},
              {"compute_units", d.compute_units},
              {"clock_mhz", d.clock_mhz},
              {"global_mem_bytes", d.global_mem_bytes},
              {"local_mem_bytes", d.local_mem_bytes},
              {"max_alloc_bytes", d.max_alloc_bytes},
              {"max_work_group_size", d.max_work_group_size},
              {"fp16", d.fp16},
              {"fp64", d.fp64}};
}

json process_json(int rank, int local_rank, const std::string& launcher, const device::TopologySummary& topology,
                  const device::BindResult& binding, const std::vector<device::DeviceInfo>& all_devices,
                  const std::vector<device::DeviceInfo>& selected) {
  json devices = json::array();
  for (const auto& d : all_devices) {
    const bool is_selected =
        std::any_of(selected.begin(), selected.end(), [&](const auto& s) { return s.index == d.index; });
    devices.push_back(device_json(d, is_selected));
  }
  json selected_indices = json::array();
  for (const auto& s : selected) selected_indices.push_back(s.index);
  return json{{"rank", rank},
              {"local_rank", local_rank},
              {"launcher", launcher},
              {"hostname", topology.hostname},
              {"topology",
               {{"cpu_model", topology.cpu_model},
                {"packages", topology.packages},
                {"numa_nodes", topology.numa_nodes},
                {"cores", topology.cores},
                {"hardware_threads", topology.hardware_threads}}},
              {"binding", {{"cpus", binding.cpus}, {"changed", binding.changed}, {"reason", binding.reason}}},
              {"devices", devices},
              {"selected", selected_indices}};
}

json job_report(const std::vector<json>& processes, const device::Mesh& mesh) {
  using device::MeshAxis;
  json mesh_devices = json::array();
  for (int id = 0; id < mesh.num_devices(); ++id) {
    const int rank = mesh.process_of(id);
    const int local = mesh.local_index_of(id);
    const int index = processes.at(static_cast<std::size_t>(rank))["selected"].at(static_cast<std::size_t>(local));
    const json& info = processes[static_cast<std::size_t>(rank)]["devices"].at(static_cast<std::size_t>(index));
    const device::MeshCoords c = mesh.coords(id);
    json groups = json::object();
    json coords = json::object();
    for (int a = mesh.size(MeshAxis::kStage) > 1 ? 0 : 1; a < device::kNumMeshAxes; ++a) {
      coords[device::kMeshAxisNames[a]] = c[a];
      groups[device::kMeshAxisNames[a]] = mesh.axis_group(id, static_cast<MeshAxis>(a));
    }
    mesh_devices.push_back(json{{"id", id},
                                {"process", rank},
                                {"local_index", local},
                                {"device_index", index},
                                {"hostname", processes[static_cast<std::size_t>(rank)]["hostname"]},
                                {"name", info["name"]},
                                {"coords", coords},
                                {"groups", groups}});
  }
  // Without stages the report keeps the three axes [data, fsdp, tensor] the mesh had before them.
  const bool stages = mesh.size(MeshAxis::kStage) > 1;
  json axes = json::array();
  for (int a = stages ? 0 : 1; a < device::kNumMeshAxes; ++a) axes.push_back(device::kMeshAxisNames[a]);
  auto shape = [&](const device::MeshShape& s) {
    return stages ? std::vector<int>(s.begin(), s.end()) : std::vector<int>(s.begin() + 1, s.end());
  };
  return json{{"processes", processes},
              {"mesh",
               {{"axes", axes},
                {"ici_shape", shape(mesh.ici())},
                {"dcn_shape", shape(mesh.dcn())},
                {"shape", shape(mesh.shape())},
                {"num_devices", mesh.num_devices()},
                {"num_processes", mesh.num_processes()},
                {"devices", mesh_devices}}}};
}

namespace {

// A left-aligned text table: column widths fit the widest cell.
std::string format_table(const std::vector<std::vector<std::string>>& rows, const std::string& indent = "  ") {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()));
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line = indent;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

std::string shape_text(const json& shape) { return fmt::format("[{}]", fmt::join(shape.get<std::vector<int>>(), ",")); }

std::string join_ints(const json& list) { return fmt::format("{}", fmt::join(list.get<std::vector<int>>(), ",")); }

// "OpenCL 3.0 PoCL HSTR: pthread-..." -> "OpenCL 3.0 PoCL": the table keeps the first three words.
std::string short_version(const std::string& version) {
  std::size_t end = 0;
  for (int words = 0; words < 3 && end != std::string::npos; ++words) end = version.find(' ', end + (words > 0));
  return version.substr(0, end);
}

std::string bytes_text(const json& v) { return device::format_bytes(v.get<std::uint64_t>()); }

}  // namespace

std::string render_table(const json& report) {
  const json& processes = report["processes"];
  const json& mesh = report["mesh"];
  std::string out = fmt::format("pax-ocl devices: {} process(es), {} mesh device(s)\n\n", processes.size(),
                                int(mesh["num_devices"]));

  std::vector<std::vector<std::string>> host_rows = {
      {"rank", "host", "launcher", "packages", "numa", "cores", "threads", "cpu model", "bound cpus", "binding"}};
  for (const json& p : processes) {
    const json& t = p["topology"];
    host_rows.push_back({std::to_string(int(p["rank"])), p["hostname"], p["launcher"], std::to_string(int(t["packages"])),
                         std::to_string(int(t["numa_nodes"])), std::to_string(int(t["cores"])),
                         std::to_string(int(t["hardware_threads"])), t["cpu_model"], p["binding"]["cpus"],
                         p["binding"]["reason"]});
  }
  out += "Host topology (hwloc)\n" + format_table(host_rows) + "\n";

  std::vector<std::vector<std::string>> dev_rows = {{"rank", "idx", "sel", "kind", "name", "platform", "driver",
                                                     "OpenCL", "CUs", "MHz", "global", "local", "max alloc",
                                                     "fp16", "fp64"}};
  for (const json& p : processes) {
    for (const json& d : p["devices"]) {
      dev_rows.push_back({std::to_string(int(p["rank"])), std::to_string(int(d["index"])),
                          d["selected"].get<bool>() ? "*" : "", d["kind"], d["name"], d["platform"],
                          d["driver_version"], short_version(d["opencl_version"]), std::to_string(int(d["compute_units"])),
                          std::to_string(int(d["clock_mhz"])), bytes_text(d["global_mem_bytes"]),
                          bytes_text(d["local_mem_bytes"]), bytes_text(d["max_alloc_bytes"]),
                          d["fp16"].get<bool>() ? "yes" : "no", d["fp64"].get<bool>() ? "yes" : "no"});
    }
  }
  out += "OpenCL devices (every platform; * = selected)\n" + format_table(dev_rows) + "\n";

  // The stage axis is shown only when the mesh has stages (shapes are then four numbers long).
  const bool stages = mesh["shape"].size() == device::kNumMeshAxes;
  out += fmt::format("Mesh: axes [{}data, fsdp, tensor]  ICI_MESH_SHAPE {} x DCN_MESH_SHAPE {} = {}\n",
                     stages ? "stage, " : "", shape_text(mesh["ici_shape"]), shape_text(mesh["dcn_shape"]),
                     shape_text(mesh["shape"]));
  std::vector<std::vector<std::string>> mesh_rows = {
      {"device", "rank", "local", "host", "name", "coords", "data group", "fsdp group", "tensor group"}};
  if (stages) mesh_rows.front().push_back("stage group");
  for (const json& d : mesh["devices"]) {
    const json& c = d["coords"];
    mesh_rows.push_back({std::to_string(int(d["id"])), std::to_string(int(d["process"])),
                         std::to_string(int(d["local_index"])), d["hostname"], d["name"],
                         fmt::format("({}{},{},{})", stages ? fmt::format("{},", int(c["stage"])) : "", int(c["data"]),
                                     int(c["fsdp"]), int(c["tensor"])),
                         join_ints(d["groups"]["data"]), join_ints(d["groups"]["fsdp"]),
                         join_ints(d["groups"]["tensor"])});
    if (stages) mesh_rows.back().push_back(join_ints(d["groups"]["stage"]));
  }
  out += format_table(mesh_rows);

  std::vector<std::vector<std::string>> check_rows = {
      {"rank", "idx", "result", "max abs error", "programs cached/compiled", "build ms", "kernel ms"}};
  for (const json& p : processes) {
    for (const json& c : p.value("checks", json::array())) {
      check_rows.push_back({std::to_string(int(p["rank"])), std::to_string(int(c["device_index"])),
                            c["passed"].get<bool>() ? "pass" : "FAIL", fmt::format("{:.2e}", double(c["max_abs_error"])),
                            fmt::format("{}/{}", int(c["programs_from_cache"]), int(c["programs_compiled"])),
                            fmt::format("{:.1f}", double(c["build_ms"])), fmt::format("{:.2f}", double(c["kernel_ms"]))});
    }
  }
  if (check_rows.size() > 1) out += "\nDevice check (axpy + add over 1M floats vs a float64 host reference)\n" + format_table(check_rows);
  return out;
}

}  // namespace paxocl::app
