// Mesh: the job's devices arranged as Pax arranges them, a hybrid of two meshes over the axes
// [stage, data, fsdp, tensor] (stage: pipeline parallelism, outermost as in paxml's
// ['stage', 'replica', 'data', 'mdl']; a three-element shape means [data, fsdp, tensor], stage 1):
//   ICI_MESH_SHAPE  devices inside one process (fast interconnect), product = devices per process
//   DCN_MESH_SHAPE  processes (MPI ranks, data-centre network), product = number of processes
// The global mesh has shape ici[a] * dcn[a] per axis, DCN being the outer granule (as JAX's
// create_hybrid_device_mesh): a device's coordinate along axis a is dcn_coord[a] * ici[a] + ici_coord[a],
// where dcn_coord unravels the process rank and ici_coord the device's local index, both row-major.
// Global device ids are process * devices_per_process + local_index.
#pragma once

#include <array>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace paxocl::device {

enum class MeshAxis : int { kStage = 0, kData = 1, kFsdp = 2, kTensor = 3 };
inline constexpr int kNumMeshAxes = 4;
inline constexpr std::array<const char*, kNumMeshAxes> kMeshAxisNames = {"stage", "data", "fsdp", "tensor"};

// Extents per axis. Three numbers are [data, fsdp, tensor] with one stage (the form every mesh had
// before the stage axis, and still the common one); four are [stage, data, fsdp, tensor].
struct MeshShape : std::array<int, kNumMeshAxes> {
  MeshShape() : std::array<int, kNumMeshAxes>{} {}
  MeshShape(int data, int fsdp, int tensor) : std::array<int, kNumMeshAxes>{1, data, fsdp, tensor} {}
  MeshShape(int stage, int data, int fsdp, int tensor) : std::array<int, kNumMeshAxes>{stage, data, fsdp, tensor} {}
  int at_axis(MeshAxis axis) const { return (*this)[static_cast<std::size_t>(axis)]; }
};
// A device's coordinates per axis; three numbers are [data, fsdp, tensor] on stage 0.
struct MeshCoords : std::array<int, kNumMeshAxes> {
  MeshCoords() : std::array<int, kNumMeshAxes>{} {}
  MeshCoords(int data, int fsdp, int tensor) : std::array<int, kNumMeshAxes>{0, data, fsdp, tensor} {}
  MeshCoords(int stage, int data, int fsdp, int tensor) : std::array<int, kNumMeshAxes>{stage, data, fsdp, tensor} {}
};

// "[2,1,1]", "[2, 1, 1]", "2,1,1" ([data, fsdp, tensor]) or "[2,2,1,1]" ([stage, data, fsdp, tensor]).
// Throws ConfigError naming `field` and the expected form.
MeshShape parse_mesh_shape(std::string_view text, std::string_view field);
// A shape from a list of 3 or 4 extents, as parse_mesh_shape reads them; ConfigError naming `field`.
MeshShape mesh_shape_from(const std::vector<long>& extents, std::string_view field);
// "[2,1,1]" with one stage (the three-element form), "[2,2,1,1]" otherwise.
std::string to_string(const MeshShape& shape);
// The same numbers as to_string, for JSON.
std::vector<int> listed(const MeshShape& shape);
// The most devices a mesh may have, over all its processes (today's largest jobs use about 10^5).
inline constexpr long kMaxMeshDevices = 1L << 20;
// Devices in `shape`; ConfigError naming the shape when that is more than kMaxMeshDevices.
int product(const MeshShape& shape);
// Devices in an ICI x DCN mesh; ConfigError naming both shapes when that is more than kMaxMeshDevices.
int mesh_devices(const MeshShape& ici, const MeshShape& dcn);

class Mesh {
 public:
  // Validates the shapes against the job; throws ConfigError that names both numbers.
  Mesh(MeshShape ici, MeshShape dcn, int num_processes, int devices_per_process);

  // Pax's defaults when a shape is not given: everything on the data axis (pure data parallel).
  static MeshShape default_shape(int count) { return MeshShape(count, 1, 1); }

  const MeshShape& ici() const { return ici_; }
  const MeshShape& dcn() const { return dcn_; }
  const MeshShape& shape() const { return shape_; }  // global: ici * dcn per axis
  int num_devices() const { return num_processes_ * devices_per_process_; }
  int num_processes() const { return num_processes_; }
  int devices_per_process() const { return devices_per_process_; }

  int size(MeshAxis axis) const { return shape_[static_cast<std::size_t>(axis)]; }      // global
  int ici_size(MeshAxis axis) const { return ici_[static_cast<std::size_t>(axis)]; }   // in a process
  int dcn_size(MeshAxis axis) const { return dcn_[static_cast<std::size_t>(axis)]; }   // over processes
  // A local device's coordinate along `axis` inside its process, and a process's among the processes.
  int ici_coord(int local_index, MeshAxis axis) const;
  int dcn_coord(int process, MeshAxis axis) const;
  // The processes holding `process`'s devices' peers along `axis` over DCN (their ranks, in order).
  std::vector<int> dcn_processes(int process, MeshAxis axis) const;

  int device_id(int process, int local_index) const;
  int process_of(int device) const { return device / devices_per_process_; }
  int local_index_of(int device) const { return device % devices_per_process_; }
  MeshCoords coords(int device) const;
  int device_at(const MeshCoords& coords) const;

  // The devices whose coordinates equal `device`'s on every axis not in `axes`, ordered row-major
  // over `axes` (in the order given). `device`'s rank in the group is its position in the result.
  std::vector<int> group(int device, std::initializer_list<MeshAxis> axes) const;
  std::vector<int> axis_group(int device, MeshAxis axis) const { return group(device, {axis}); }
  // The part of axis_group inside `device`'s process (reached over ICI) ...
  std::vector<int> ici_group(int device, MeshAxis axis) const;
  // ... and the part across processes with `device`'s ICI coordinates (reached over DCN).
  std::vector<int> dcn_group(int device, MeshAxis axis) const;

 private:
  MeshShape ici_, dcn_, shape_;
  int num_processes_, devices_per_process_;
};

}  // namespace paxocl::device
