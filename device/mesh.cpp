#include "device/mesh.h"

#include <cctype>
#include <charconv>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/errors.h"

namespace paxocl::device {

namespace {

// Row-major unravel/ravel of an index over a shape (last axis fastest), as numpy and JAX do.
MeshCoords unravel(int index, const MeshShape& shape) {
  MeshCoords c{};
  for (int a = kNumMeshAxes - 1; a >= 0; --a) {
    c[a] = index % shape[a];
    index /= shape[a];
  }
  return c;
}
int ravel(const MeshCoords& c, const MeshShape& shape) {
  int index = 0;
  for (int a = 0; a < kNumMeshAxes; ++a) index = index * shape[a] + c[a];
  return index;
}

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

int product(const MeshShape& shape) {
  long n = 1;
  for (const int extent : shape) {
    n *= extent;
    if (n > kMaxMeshDevices) {
      throw ConfigError(fmt::format("mesh shape {} has more than {} devices, the most pax-ocl supports", to_string(shape),
                                    kMaxMeshDevices));
    }
  }
  return static_cast<int>(n);
}

int mesh_devices(const MeshShape& ici, const MeshShape& dcn) {
  const long n = static_cast<long>(product(ici)) * product(dcn);
  if (n > kMaxMeshDevices) {
    throw ConfigError(fmt::format("ICI_MESH_SHAPE={} x DCN_MESH_SHAPE={} = {} devices, more than {}, the most pax-ocl "
                                  "supports",
                                  to_string(ici), to_string(dcn), n, kMaxMeshDevices));
  }
  return static_cast<int>(n);
}

std::vector<int> listed(const MeshShape& shape) {
  if (shape[0] == 1) return {shape[1], shape[2], shape[3]};
  return {shape.begin(), shape.end()};
}

std::string to_string(const MeshShape& shape) { return fmt::format("[{}]", fmt::join(listed(shape), ",")); }

namespace {
constexpr std::string_view kExpectedShape =
    "expected [data, fsdp, tensor] or [stage, data, fsdp, tensor] as positive integers, e.g. [2,1,1] or [2,1,1,1]";
}  // namespace

MeshShape mesh_shape_from(const std::vector<long>& extents, std::string_view field) {
  if (extents.size() != 3 && extents.size() != 4) {
    throw ConfigError(fmt::format("{}: {} dimension(s); {}", field, extents.size(), kExpectedShape));
  }
  const std::size_t first = kNumMeshAxes - extents.size();  // three: the stage axis is 1
  MeshShape shape(1, 1, 1, 1);
  for (std::size_t i = 0; i < extents.size(); ++i) {
    if (extents[i] < 1 || extents[i] > kMaxMeshDevices) {
      throw ConfigError(fmt::format("{}: the {} axis is {}, but every axis must be between 1 and {}", field,
                                    kMeshAxisNames[first + i], extents[i], kMaxMeshDevices));
    }
    shape[first + i] = static_cast<int>(extents[i]);
  }
  product(shape);  // its ConfigError when the whole is too large
  return shape;
}

MeshShape parse_mesh_shape(std::string_view text, std::string_view field) {
  std::string body = trim(text);
  // Accept the quoted form a shell script may pass through ("[2,1,1]" or '[2,1,1]').
  if (body.size() >= 2 && (body.front() == '"' || body.front() == '\'') && body.back() == body.front()) {
    body = trim(std::string_view(body).substr(1, body.size() - 2));
  }
  if (!body.empty() && body.front() == '[') {
    if (body.back() != ']') throw ConfigError(fmt::format("{}={}: missing ']'; {}", field, text, kExpectedShape));
    body = body.substr(1, body.size() - 2);
  }
  std::vector<long> extents;
  std::size_t start = 0;
  while (start <= body.size()) {
    const std::size_t comma = std::min(body.find(',', start), body.size());
    const std::string item = trim(std::string_view(body).substr(start, comma - start));
    long value = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size()) {
      throw ConfigError(fmt::format("{}={}: '{}' is not an integer; {}", field, text, item, kExpectedShape));
    }
    if (extents.size() == kNumMeshAxes) {
      throw ConfigError(fmt::format("{}={}: too many dimensions; {}", field, text, kExpectedShape));
    }
    extents.push_back(value);
    start = comma + 1;
  }
  return mesh_shape_from(extents, fmt::format("{}={}", field, text));
}

Mesh::Mesh(MeshShape ici, MeshShape dcn, int num_processes, int devices_per_process)
    : ici_(ici), dcn_(dcn), num_processes_(num_processes), devices_per_process_(devices_per_process) {
  for (int a = 0; a < kNumMeshAxes; ++a) {
    if (ici[a] < 1 || dcn[a] < 1) {
      throw ConfigError(fmt::format("mesh axis '{}' must be at least 1 (ICI_MESH_SHAPE={}, DCN_MESH_SHAPE={})",
                                    kMeshAxisNames[a], to_string(ici), to_string(dcn)));
    }
    shape_[a] = ici[a] * dcn[a];
  }
  if (product(ici) != devices_per_process) {
    throw ConfigError(fmt::format(
        "ICI_MESH_SHAPE={} holds {} device(s) per process, but this process has {} selected; set "
        "--fdl.ICI_MESH_SHAPE to a shape whose product is {} (e.g. [{},1,1]) or select {} device(s) with --devices",
        to_string(ici), product(ici), devices_per_process, devices_per_process, devices_per_process, product(ici)));
  }
  if (product(dcn) != num_processes) {
    throw ConfigError(fmt::format(
        "DCN_MESH_SHAPE={} holds {} process(es), but the job has {}; set --fdl.DCN_MESH_SHAPE to a shape whose "
        "product is {} (e.g. [{},1,1]) or launch {} process(es) (mpirun -np {} / srun -n {})",
        to_string(dcn), product(dcn), num_processes, num_processes, num_processes, product(dcn), product(dcn),
        product(dcn)));
  }
}

int Mesh::device_id(int process, int local_index) const { return process * devices_per_process_ + local_index; }

int Mesh::ici_coord(int local_index, MeshAxis axis) const {
  return unravel(local_index, ici_)[static_cast<std::size_t>(axis)];
}
int Mesh::dcn_coord(int process, MeshAxis axis) const { return unravel(process, dcn_)[static_cast<std::size_t>(axis)]; }

std::vector<int> Mesh::dcn_processes(int process, MeshAxis axis) const {
  std::vector<int> processes;
  for (int device : dcn_group(device_id(process, 0), axis)) processes.push_back(process_of(device));
  return processes;
}

MeshCoords Mesh::coords(int device) const {
  const MeshCoords outer = unravel(process_of(device), dcn_);
  const MeshCoords inner = unravel(local_index_of(device), ici_);
  MeshCoords c{};
  for (int a = 0; a < kNumMeshAxes; ++a) c[a] = outer[a] * ici_[a] + inner[a];
  return c;
}

int Mesh::device_at(const MeshCoords& coords) const {
  MeshCoords outer{}, inner{};
  for (int a = 0; a < kNumMeshAxes; ++a) {
    outer[a] = coords[a] / ici_[a];
    inner[a] = coords[a] % ici_[a];
  }
  return device_id(ravel(outer, dcn_), ravel(inner, ici_));
}

std::vector<int> Mesh::group(int device, std::initializer_list<MeshAxis> axes) const {
  const MeshCoords base = coords(device);
  std::vector<int> members{device_at(base)};
  // Expand one axis at a time; the first axis given varies slowest (row-major over `axes`).
  for (MeshAxis axis : axes) {
    const int a = static_cast<int>(axis);
    std::vector<int> expanded;
    for (int member : members) {
      MeshCoords c = coords(member);
      for (int i = 0; i < shape_[a]; ++i) {
        c[a] = i;
        expanded.push_back(device_at(c));
      }
    }
    members = std::move(expanded);
  }
  return members;
}

std::vector<int> Mesh::ici_group(int device, MeshAxis axis) const {
  std::vector<int> members;
  for (int member : axis_group(device, axis)) {
    if (process_of(member) == process_of(device)) members.push_back(member);
  }
  return members;
}

std::vector<int> Mesh::dcn_group(int device, MeshAxis axis) const {
  std::vector<int> members;
  for (int member : axis_group(device, axis)) {
    if (local_index_of(member) == local_index_of(device)) members.push_back(member);
  }
  return members;
}

}  // namespace paxocl::device
