// hwloc topology summary against the kernel's own view, and core-slice binding.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include "common/errors.h"
#include "device/host_topology.h"

namespace paxocl::device {
namespace {

int affinity_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  return CPU_COUNT(&set);
}

// Restores this process's CPU affinity when the test ends.
class AffinityGuard {
 public:
  AffinityGuard() { sched_getaffinity(0, sizeof saved_, &saved_); }
  ~AffinityGuard() { sched_setaffinity(0, sizeof saved_, &saved_); }

 private:
  cpu_set_t saved_{};
};

TEST(HostTopology, SummaryAgreesWithTheKernel) {
  HostTopology topology;
  const TopologySummary s = topology.summary();
  EXPECT_GE(s.packages, 1);
  EXPECT_GE(s.numa_nodes, 1);
  EXPECT_GE(s.cores, s.packages);
  EXPECT_GE(s.hardware_threads, s.cores);
  EXPECT_EQ(s.hardware_threads, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  EXPECT_EQ(s.hostname, host);
}

TEST(HostTopology, AutoLeavesASingleProcessAlone) {
  AffinityGuard guard;
  HostTopology topology;
  const int before = affinity_count();
  const BindResult r = topology.bind_process(0, 1, BindPolicy::kAuto);
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(r.reason, "single process on host");
  EXPECT_EQ(affinity_count(), before);
}

TEST(HostTopology, SharedHostGivesEachProcessADisjointCoreSlice) {
  AffinityGuard guard;
  HostTopology topology;
  const int cores = topology.summary().cores;
  if (cores < 2) GTEST_SKIP() << "needs at least 2 cores";
  const int threads_per_core = topology.summary().hardware_threads / cores;
  const BindResult first = topology.bind_process(0, 2, BindPolicy::kCores);
  ASSERT_TRUE(first.changed) << first.reason;
  EXPECT_EQ(affinity_count(), (cores / 2) * threads_per_core);
  cpu_set_t slice0;
  sched_getaffinity(0, sizeof slice0, &slice0);
  const BindResult second = topology.bind_process(1, 2, BindPolicy::kCores);
  ASSERT_TRUE(second.changed) << second.reason;
  cpu_set_t slice1, both;
  sched_getaffinity(0, sizeof slice1, &slice1);
  CPU_AND(&both, &slice0, &slice1);
  EXPECT_EQ(CPU_COUNT(&both), 0) << first.cpus << " overlaps " << second.cpus;
  EXPECT_NE(first.cpus, second.cpus);
}

TEST(HostTopology, AutoRespectsALauncherBinding) {
  AffinityGuard guard;
  HostTopology topology;
  if (topology.summary().hardware_threads < 2) GTEST_SKIP() << "needs at least 2 hardware threads";
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);  // as mpirun --bind-to core would
  const BindResult r = topology.bind_process(0, 2, BindPolicy::kAuto);
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(r.reason, "bound by launcher");
  EXPECT_EQ(affinity_count(), 1);
}

TEST(HostTopology, AutoWidensALauncherBindingForALoneProcess) {
  AffinityGuard guard;
  HostTopology topology;
  if (topology.summary().hardware_threads < 2) GTEST_SKIP() << "needs at least 2 hardware threads";
  const int all = affinity_count();
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);  // mpirun -np 1 binds to one core by default
  const BindResult r = topology.bind_process(0, 1, BindPolicy::kAuto);
  EXPECT_TRUE(r.changed) << r.reason;
  EXPECT_EQ(affinity_count(), all);
}

TEST(HostTopology, BindPolicyParsing) {
  EXPECT_EQ(parse_bind_policy("auto"), BindPolicy::kAuto);
  EXPECT_EQ(parse_bind_policy("none"), BindPolicy::kNone);
  EXPECT_EQ(parse_bind_policy("cores"), BindPolicy::kCores);
  EXPECT_THROW(parse_bind_policy("sockets"), ConfigError);
}

}  // namespace
}  // namespace paxocl::device
