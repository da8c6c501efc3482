// The ICI x DCN mesh: shape parsing, validation messages, coordinates (hand-written golden cases
// and a block-assembly reference after JAX's create_hybrid_device_mesh), axis groups, protobuf form.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "common/errors.h"
#include "device/mesh.h"
#include "device/mesh_proto.h"
#include "tests/test_support.h"

namespace paxocl::device {
namespace {

std::string config_error(auto&& fn) { return testing::error_message<ConfigError>(fn); }

TEST(MeshShapeParsing, AcceptsPaxForms) {
  EXPECT_EQ(parse_mesh_shape("[2,1,1]", "X"), (MeshShape{2, 1, 1}));
  EXPECT_EQ(parse_mesh_shape("[8, 1, 1]", "X"), (MeshShape{8, 1, 1}));
  EXPECT_EQ(parse_mesh_shape("1,32,1", "X"), (MeshShape{1, 32, 1}));
  EXPECT_EQ(parse_mesh_shape("\"[1,8,1]\"", "X"), (MeshShape{1, 8, 1}));
  EXPECT_EQ(to_string(MeshShape{4, 2, 1}), "[4,2,1]");
  // Four numbers put a stage axis first; with one stage a shape prints as the three-number form.
  EXPECT_EQ(parse_mesh_shape("[2,1,1,2]", "X"), (MeshShape{2, 1, 1, 2}));
  EXPECT_EQ(parse_mesh_shape("[1,2,1,1]", "X"), (MeshShape{2, 1, 1}));
  EXPECT_EQ(to_string(MeshShape{2, 4, 1, 1}), "[2,4,1,1]");
  EXPECT_EQ(to_string(MeshShape{1, 4, 1, 1}), "[4,1,1]");
}

TEST(MeshShapeParsing, RejectsMalformedShapesNamingTheField) {
  EXPECT_NE(config_error([] { parse_mesh_shape("[2,1]", "ICI_MESH_SHAPE"); }).find("ICI_MESH_SHAPE=[2,1]: 2 dimension(s)"),
            std::string::npos);
  EXPECT_NE(config_error([] { parse_mesh_shape("[2,1,1,1,1]", "X"); }).find("too many dimensions"), std::string::npos);
  EXPECT_NE(config_error([] { parse_mesh_shape("[0,1,1,1]", "X"); }).find("the stage axis is 0"), std::string::npos);
  EXPECT_NE(config_error([] { parse_mesh_shape("[2,a,1]", "X"); }).find("'a' is not an integer"), std::string::npos);
  EXPECT_NE(config_error([] { parse_mesh_shape("[2,0,1]", "X"); }).find("the fsdp axis is 0"), std::string::npos);
  EXPECT_NE(config_error([] { parse_mesh_shape("[2,1,1", "X"); }).find("missing ']'"), std::string::npos);
  EXPECT_NE(config_error([] { parse_mesh_shape("", "X"); }).find("is not an integer"), std::string::npos);
}

TEST(MeshValidation, ProductMismatchesSayBothNumbers) {
  const std::string ici = config_error([] { Mesh({4, 1, 1}, {1, 1, 1}, 1, 2); });
  EXPECT_NE(ici.find("ICI_MESH_SHAPE=[4,1,1] holds 4 device(s) per process, but this process has 2 selected"),
            std::string::npos) << ici;
  const std::string dcn = config_error([] { Mesh({2, 1, 1}, {1, 2, 1}, 4, 2); });
  EXPECT_NE(dcn.find("DCN_MESH_SHAPE=[1,2,1] holds 2 process(es), but the job has 4"), std::string::npos) << dcn;
  EXPECT_NE(dcn.find("mpirun -np 2"), std::string::npos) << dcn;
}

// Golden: ICI [2,1,1] x DCN [2,1,1] (the 2 processes x 2 devices): one data axis of 4.
TEST(MeshCoords, TwoByTwoDataParallel) {
  const Mesh mesh({2, 1, 1}, {2, 1, 1}, 2, 2);
  EXPECT_EQ(mesh.shape(), (MeshShape{4, 1, 1}));
  EXPECT_EQ(mesh.coords(0), (MeshCoords{0, 0, 0}));
  EXPECT_EQ(mesh.coords(1), (MeshCoords{1, 0, 0}));
  EXPECT_EQ(mesh.coords(2), (MeshCoords{2, 0, 0}));
  EXPECT_EQ(mesh.coords(3), (MeshCoords{3, 0, 0}));
  EXPECT_EQ(mesh.axis_group(2, MeshAxis::kData), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(mesh.axis_group(2, MeshAxis::kFsdp), (std::vector<int>{2}));
  EXPECT_EQ(mesh.ici_group(2, MeshAxis::kData), (std::vector<int>{2, 3}));
  EXPECT_EQ(mesh.dcn_group(2, MeshAxis::kData), (std::vector<int>{0, 2}));
}

// Golden: FSDP inside a process, data across processes: ICI [1,2,1] x DCN [2,1,1].
TEST(MeshCoords, FsdpInsideDataAcross) {
  const Mesh mesh({1, 2, 1}, {2, 1, 1}, 2, 2);
  EXPECT_EQ(mesh.shape(), (MeshShape{2, 2, 1}));
  EXPECT_EQ(mesh.coords(0), (MeshCoords{0, 0, 0}));
  EXPECT_EQ(mesh.coords(1), (MeshCoords{0, 1, 0}));
  EXPECT_EQ(mesh.coords(2), (MeshCoords{1, 0, 0}));
  EXPECT_EQ(mesh.coords(3), (MeshCoords{1, 1, 0}));
  EXPECT_EQ(mesh.axis_group(3, MeshAxis::kFsdp), (std::vector<int>{2, 3}));
  EXPECT_EQ(mesh.axis_group(3, MeshAxis::kData), (std::vector<int>{1, 3}));
  EXPECT_EQ(mesh.group(3, {MeshAxis::kData, MeshAxis::kFsdp}), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(mesh.group(0, {MeshAxis::kFsdp, MeshAxis::kData}), (std::vector<int>{0, 2, 1, 3}));
}

// Golden: the same axis split over ICI and DCN, with a second ICI axis: ICI [2,1,2] x DCN [2,1,1].
TEST(MeshCoords, SplitAxisWithTensorInside) {
  const Mesh mesh({2, 1, 2}, {2, 1, 1}, 2, 4);
  EXPECT_EQ(mesh.shape(), (MeshShape{4, 1, 2}));
  // Process 1's local devices 0..3 unravel over ICI [2,1,2] as (0,0),(0,1),(1,0),(1,1); data offset 2.
  EXPECT_EQ(mesh.coords(4), (MeshCoords{2, 0, 0}));
  EXPECT_EQ(mesh.coords(5), (MeshCoords{2, 0, 1}));
  EXPECT_EQ(mesh.coords(6), (MeshCoords{3, 0, 0}));
  EXPECT_EQ(mesh.coords(7), (MeshCoords{3, 0, 1}));
  EXPECT_EQ(mesh.axis_group(5, MeshAxis::kData), (std::vector<int>{1, 3, 5, 7}));
  EXPECT_EQ(mesh.axis_group(5, MeshAxis::kTensor), (std::vector<int>{4, 5}));
  EXPECT_EQ(mesh.ici_group(5, MeshAxis::kData), (std::vector<int>{5, 7}));
  EXPECT_EQ(mesh.dcn_group(5, MeshAxis::kData), (std::vector<int>{1, 5}));
}

// Reference after jax.experimental.mesh_utils.create_hybrid_device_mesh on CPU: each process's
// devices reshaped to ICI form a block; blocks are laid out over DCN (np.block).
std::map<MeshCoords, int> hybrid_reference(const MeshShape& ici, const MeshShape& dcn) {
  std::map<MeshCoords, int> grid;
  int device = 0;
  for (int p0 = 0; p0 < dcn[0]; ++p0)
    for (int p1 = 0; p1 < dcn[1]; ++p1)
      for (int p2 = 0; p2 < dcn[2]; ++p2)
        for (int p3 = 0; p3 < dcn[3]; ++p3)
          for (int l0 = 0; l0 < ici[0]; ++l0)
            for (int l1 = 0; l1 < ici[1]; ++l1)
              for (int l2 = 0; l2 < ici[2]; ++l2)
                for (int l3 = 0; l3 < ici[3]; ++l3) {
                  grid[MeshCoords{p0 * ici[0] + l0, p1 * ici[1] + l1, p2 * ici[2] + l2, p3 * ici[3] + l3}] = device++;
                }
  return grid;
}

TEST(MeshCoords, MatchesHybridMeshReferenceOnManyShapes) {
  const std::vector<std::pair<MeshShape, MeshShape>> cases = {
      {{1, 1, 1}, {1, 1, 1}}, {{8, 1, 1}, {8, 1, 1}}, {{1, 8, 1}, {1, 32, 1}}, {{2, 2, 2}, {2, 1, 3}},
      {{1, 1, 8}, {1, 4, 1}}, {{3, 1, 2}, {1, 2, 2}}, {{2, 3, 1}, {2, 1, 1}},
      {{2, 1, 1, 1}, {1, 1, 1, 1}}, {{2, 2, 1, 1}, {2, 1, 1, 1}}, {{1, 2, 1, 2}, {3, 1, 1, 1}}, {{2, 1, 1, 2}, {1, 2, 1, 1}}};
  for (const auto& [ici, dcn] : cases) {
    const Mesh mesh(ici, dcn, product(dcn), product(ici));
    const auto reference = hybrid_reference(ici, dcn);
    ASSERT_EQ(static_cast<int>(reference.size()), mesh.num_devices());
    for (const auto& [coords, device] : reference) {
      EXPECT_EQ(mesh.coords(device), coords) << "ICI " << to_string(ici) << " DCN " << to_string(dcn) << " device " << device;
      EXPECT_EQ(mesh.device_at(coords), device);
    }
  }
}

TEST(MeshGroups, PartitionTheMeshAlongEveryAxis) {
  const Mesh mesh({2, 2, 1, 2}, {2, 1, 3, 1}, 6, 8);
  for (int a = 0; a < kNumMeshAxes; ++a) {
    const auto axis = static_cast<MeshAxis>(a);
    std::set<int> covered;
    for (int d = 0; d < mesh.num_devices(); ++d) {
      const std::vector<int> group = mesh.axis_group(d, axis);
      ASSERT_EQ(static_cast<int>(group.size()), mesh.shape()[a]);
      for (int i = 0; i < static_cast<int>(group.size()); ++i) {
        MeshCoords expected = mesh.coords(d);
        expected[a] = i;  // members differ from d only along the axis, ordered by coordinate
        EXPECT_EQ(mesh.coords(group[i]), expected);
      }
      // ICI part x DCN part = the whole axis group, sizes ici[a] and dcn[a].
      EXPECT_EQ(static_cast<int>(mesh.ici_group(d, axis).size()), mesh.ici()[a]);
      EXPECT_EQ(static_cast<int>(mesh.dcn_group(d, axis).size()), mesh.dcn()[a]);
      for (int m : mesh.ici_group(d, axis)) EXPECT_EQ(mesh.process_of(m), mesh.process_of(d));
      covered.insert(group.begin(), group.end());
    }
    EXPECT_EQ(static_cast<int>(covered.size()), mesh.num_devices());
  }
}

TEST(MeshProto, RoundTripsAndRejectsMalformedSpecs) {
  const Mesh mesh({1, 2, 1}, {2, 1, 1}, 2, 2);
  const proto::MeshSpec spec = to_proto(mesh);
  std::string bytes;
  ASSERT_TRUE(spec.SerializeToString(&bytes));
  proto::MeshSpec parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  const Mesh back = mesh_from_proto(parsed);
  EXPECT_EQ(back.ici(), mesh.ici());
  EXPECT_EQ(back.dcn(), mesh.dcn());
  EXPECT_EQ(parsed.axis_names(0), "stage");
  EXPECT_EQ(parsed.axis_names(2), "fsdp");

  // A checkpoint from before the stage axis records [data, fsdp, tensor]: one stage.
  proto::MeshSpec legacy;
  for (int a = 1; a < kNumMeshAxes; ++a) {
    legacy.add_axis_names(kMeshAxisNames[a]);
    legacy.add_ici_shape(mesh.ici()[a]);
    legacy.add_dcn_shape(mesh.dcn()[a]);
  }
  EXPECT_EQ(mesh_from_proto(legacy).ici(), mesh.ici());
  EXPECT_EQ(mesh_from_proto(legacy).dcn(), mesh.dcn());

  proto::MeshSpec bad = spec;
  bad.set_axis_names(3, "model");
  EXPECT_NE(config_error([&] { mesh_from_proto(bad); }).find("axis 3 is 'model'"), std::string::npos);
  bad = spec;
  bad.set_dcn_shape(1, 0);
  EXPECT_NE(config_error([&] { mesh_from_proto(bad); }).find("both must be at least 1"), std::string::npos);
  bad = spec;
  bad.add_ici_shape(1);
  EXPECT_NE(config_error([&] { mesh_from_proto(bad); }).find("expected 4 of each"), std::string::npos);
}

}  // namespace
}  // namespace paxocl::device
