// Run under `mpirun -np 2` with POCL_DEVICES="pthread pthread": two processes with two PoCL
// devices each form ICI [2,1,1] x DCN [2,1,1]. Each rank checks its own devices' coordinates and
// groups, and the ranks cross-check one another through MPI.
#include <gtest/gtest.h>

#include "tests/mpi_test_main.h"
#include "collectives/process_world.h"
#include "device/device_selection.h"
#include "common/errors.h"
#include "device/mesh.h"

namespace paxocl {
namespace {

TEST(MeshUnderMpi, TwoProcessesTimesTwoDevices) {
  const collectives::ProcessWorld& world = paxocl::testing::test_world();
  ASSERT_TRUE(world.uses_mpi()) << "run this test under mpirun -np 2";
  ASSERT_EQ(world.size(), 2);
  EXPECT_EQ(world.launcher(), "mpirun");
  EXPECT_EQ(world.local_size(), 2);  // both ranks share this host
  EXPECT_EQ(world.local_rank(), world.rank());

  const auto selected =
      device::select_devices(device::enumerate_devices(), device::parse_device_selection("cpu"));
  ASSERT_EQ(selected.size(), 2u) << "expects POCL_DEVICES='pthread pthread'";
  const std::vector<int> counts = world.all_gather(static_cast<int>(selected.size()));
  ASSERT_EQ(counts, (std::vector<int>{2, 2}));

  const device::Mesh mesh({2, 1, 1}, {2, 1, 1}, world.size(), 2);
  ASSERT_EQ(mesh.num_devices(), 4);
  for (int local = 0; local < 2; ++local) {
    const int id = mesh.device_id(world.rank(), local);
    EXPECT_EQ(id, 2 * world.rank() + local);
    // Data-axis coordinate = rank * ICI data size + local index; the other axes are 0.
    EXPECT_EQ(mesh.coords(id), (device::MeshCoords{2 * world.rank() + local, 0, 0}));
    EXPECT_EQ(mesh.axis_group(id, device::MeshAxis::kData), (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(mesh.axis_group(id, device::MeshAxis::kFsdp), (std::vector<int>{id}));
    EXPECT_EQ(mesh.axis_group(id, device::MeshAxis::kTensor), (std::vector<int>{id}));
    EXPECT_EQ(mesh.ici_group(id, device::MeshAxis::kData), (std::vector<int>{2 * world.rank(), 2 * world.rank() + 1}));
    EXPECT_EQ(mesh.dcn_group(id, device::MeshAxis::kData), (std::vector<int>{local, 2 + local}));
  }

  // Every rank's view of every device agrees: gather each rank's data coordinates.
  std::string mine;
  for (int local = 0; local < 2; ++local) {
    mine += std::to_string(mesh.coords(mesh.device_id(world.rank(), local)).at(static_cast<std::size_t>(device::MeshAxis::kData))) + ";";
  }
  const std::vector<std::string> all = world.all_gather(mine);
  EXPECT_EQ(all, (std::vector<std::string>{"0;1;", "2;3;"}));

  // Wrong DCN shape for 2 processes is refused on every rank alike.
  EXPECT_THROW(device::Mesh({2, 1, 1}, {4, 1, 1}, world.size(), 2), ConfigError);
}

}  // namespace
}  // namespace paxocl
