// Conversion between device::Mesh and its protobuf form (proto/mesh.proto).
#pragma once

#include "device/mesh.h"
#include "proto/mesh.pb.h"

namespace paxocl::device {

proto::MeshSpec to_proto(const Mesh& mesh);
// Rebuilds the mesh a MeshSpec describes; throws ConfigError when the message is malformed
// (wrong axis names or counts, non-positive dimensions).
Mesh mesh_from_proto(const proto::MeshSpec& spec);

}  // namespace paxocl::device
