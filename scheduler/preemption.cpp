#include "scheduler/preemption.h"

#include <unistd.h>

#include <csignal>
#include <vector>

namespace paxocl::scheduler {

namespace {

volatile std::sig_atomic_t g_signal = 0;
unsigned g_grace_seconds = 60;  // set before the handlers are installed

extern "C" void on_preempt_signal(int signal) {
  if (g_signal != 0) ::_exit(128 + signal);
  g_signal = signal;
  ::alarm(g_grace_seconds);
}

}  // namespace

PreemptionWatch::PreemptionWatch(unsigned grace_seconds) {
  g_signal = 0;
  g_grace_seconds = grace_seconds;
  std::signal(SIGTERM, on_preempt_signal);
  std::signal(SIGUSR1, on_preempt_signal);
}

PreemptionWatch::~PreemptionWatch() {
  std::signal(SIGTERM, SIG_DFL);
  std::signal(SIGUSR1, SIG_DFL);
}

bool PreemptionWatch::requested(const collectives::ProcessWorld& world) const {
  std::vector<double> flag = {g_signal != 0 ? 1.0 : 0.0};
  if (world.size() > 1) world.all_reduce_sum(flag);
  return flag[0] > 0;
}

int PreemptionWatch::signal() const { return static_cast<int>(g_signal); }

void PreemptionWatch::disarm() const { ::alarm(0); }

}  // namespace paxocl::scheduler
