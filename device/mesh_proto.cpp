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
  if (spec.axis_names_size() != kNumMeshAxes || spec.ici_shape_size() != kNumMeshAxes ||
      spec.dcn_shape_size() != kNumMeshAxes) {
    throw ConfigError(fmt::format("mesh spec has {} axis names, {} ICI and {} DCN dimensions; expected {} of each",
                                  spec.axis_names_size(), spec.ici_shape_size(), spec.dcn_shape_size(), kNumMeshAxes));
  }
  MeshShape ici{}, dcn{};
  for (int a = 0; a < kNumMeshAxes; ++a) {
    if (spec.axis_names(a) != kMeshAxisNames[a]) {
      throw ConfigError(fmt::format("mesh spec axis {} is '{}'; pax-ocl's axes are [{}]", a, spec.axis_names(a),
                                    fmt::join(kMeshAxisNames, ", ")));
    }
    ici[a] = spec.ici_shape(a);
    dcn[a] = spec.dcn_shape(a);
    if (ici[a] < 1 || dcn[a] < 1) {
      throw ConfigError(fmt::format("mesh spec axis '{}' has ICI {} and DCN {}; both must be at least 1",
                                    kMeshAxisNames[a], ici[a], dcn[a]));
    }
  }
  return Mesh(ici, dcn, product(dcn), product(ici));
}

}  // namespace paxocl::device
