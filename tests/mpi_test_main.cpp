#include "tests/mpi_test_main.h"

#include <gtest/gtest.h>

namespace paxocl::testing {
namespace {
collectives::ProcessWorld* g_world = nullptr;
}  // namespace

const collectives::ProcessWorld& test_world() { return *g_world; }

}  // namespace paxocl::testing

int main(int argc, char** argv) {
  paxocl::collectives::ProcessWorld world(&argc, &argv);
  paxocl::testing::g_world = &world;
  ::testing::InitGoogleTest(&argc, argv);
  if (world.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int failed = RUN_ALL_TESTS();
  int any = 0;
  for (int f : world.all_gather(failed)) any |= f;
  return any;
}
