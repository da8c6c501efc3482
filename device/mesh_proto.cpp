#include "device/mesh_proto.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/errors.h"

namespace paxocl::device {

proto::MeshSpec to_proto(const Mesh& mesh) {
  proto::MeshSpec spec;
  for (int a = 0; a < kNumMeshAxes; ++a) {
    spec.add_axis_names(kMeshAxisNames[a]);
    spec.add_ici_shape(mesh.ici()[a]);
    spec.add_dcn_shape(mesh.dcn()[a]);
  }
  return spec;
}

Mesh mesh_from_proto(const proto::MeshSpec& spec) {
  // Checkpoints written before the stage axis record [data, fsdp, tensor]: one stage.
  const int axes = spec.axis_names_size();
  if ((axes != kNumMeshAxes && axes != kNumMeshAxes - 1) || spec.ici_shape_size() != axes || spec.dcn_shape_size() != axes) {
    throw ConfigError(fmt::format("mesh spec has {} axis names, {} ICI and {} DCN dimensions; expected {} of each "
                                  "(or {} without the stage axis)",
                                  axes, spec.ici_shape_size(), spec.dcn_shape_size(), kNumMeshAxes, kNumMeshAxes - 1));
  }
  const int first = kNumMeshAxes - axes;
  MeshShape ici(1, 1, 1, 1), dcn(1, 1, 1, 1);
  for (int i = 0; i < axes; ++i) {
    const int a = first + i;
    if (spec.axis_names(i) != kMeshAxisNames[a]) {
      throw ConfigError(fmt::format("mesh spec axis {} is '{}'; pax-ocl's axes are [{}]", i, spec.axis_names(i),
                                    fmt::join(kMeshAxisNames, ", ")));
    }
    ici[a] = spec.ici_shape(i);
    dcn[a] = spec.dcn_shape(i);
    if (ici[a] < 1 || dcn[a] < 1) {
      throw ConfigError(fmt::format("mesh spec axis '{}' has ICI {} and DCN {}; both must be at least 1",
                                    kMeshAxisNames[a], ici[a], dcn[a]));
    }
  }
  return Mesh(ici, dcn, product(dcn), product(ici));
}

}  // namespace paxocl::device
