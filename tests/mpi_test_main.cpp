#include "tests/mpi_test_main.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace paxocl::testing {
namespace {
collectives::ProcessWorld* g_world = nullptr;

// Ranks other than 0 print only their failures, each prefixed with the rank, so a failure on
// rank 3 is seen (not just its exit code) without every rank repeating the full report.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::string message = r.message();
    const std::string prefix = "[rank " + std::to_string(rank_) + "] ";
    for (std::size_t at = message.find('\n'); at != std::string::npos; at = message.find('\n', at + 1)) {
      message.insert(at + 1, prefix);
    }
    std::printf("%s%s:%d: Failure\n%s%s\n", prefix.c_str(), r.file_name() ? r.file_name() : "?", r.line_number(),
                prefix.c_str(), message.c_str());
    std::fflush(stdout);
  }
  void OnTestEnd(const ::testing::TestInfo& t) override {
    if (!t.result()->Failed()) return;
    std::printf("[rank %d] [  FAILED  ] %s.%s\n", rank_, t.test_suite_name(), t.name());
    std::fflush(stdout);
  }

 private:
  int rank_;
};
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
    listeners.Append(new paxocl::testing::RankFailurePrinter(world.rank()));  // gtest owns it
  }
  const int failed = RUN_ALL_TESTS();
  int any = 0;
  for (int f : world.all_gather(failed)) any |= f;
  return any;
}
