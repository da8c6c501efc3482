// main() for test binaries that ctest runs under mpirun (and alone, as a world of one): it starts
// the ProcessWorld, prints results on rank 0 and the failures of other ranks (prefixed "[rank N]"),
// and fails every rank if any rank failed.
#pragma once

#include "collectives/process_world.h"

namespace paxocl::testing {

const collectives::ProcessWorld& test_world();

}  // namespace paxocl::testing
