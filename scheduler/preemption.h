// PreemptionWatch: SIGTERM and SIGUSR1 (a preemption, or Slurm's early warning) ask the job to
// finish its step, save a checkpoint and exit with kExitPreempted, so a requeue resumes it.
// The job then has PREEMPTION_GRACE_SECONDS: a peer that died leaves the step's collectives
// hanging, and mpirun's SIGTERM must still end the job, so SIGALRM ends the process when the
// grace runs out. A second signal ends it at once. One watch per process at a time.
#pragma once

#include "collectives/process_world.h"

namespace paxocl::scheduler {

class PreemptionWatch {
 public:
  explicit PreemptionWatch(unsigned grace_seconds);  // installs the handlers
  ~PreemptionWatch();                                // restores the default ones
  PreemptionWatch(const PreemptionWatch&) = delete;
  PreemptionWatch& operator=(const PreemptionWatch&) = delete;

  // Whether any process of the job got a signal (collective: all stop at the same step).
  bool requested(const collectives::ProcessWorld& world) const;
  int signal() const;   // the signal this process got (0: none)
  void disarm() const;  // the save is committed: no SIGALRM
};

}  // namespace paxocl::scheduler
