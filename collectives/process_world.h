// ProcessWorld: the job's processes (the DCN side of the mesh). MPI is initialised only when a
// launcher started this process:
//   Open MPI's mpirun / mpiexec (OMPI_COMM_WORLD_SIZE), srun --mpi=pmix (PMIX_RANK);
// a launcher it cannot join (srun --mpi=none|pmi2 with several tasks, MPICH's PMI) is a clear
// ConfigError rather than an abort inside MPI_Init. Otherwise the world is this one process and MPI is never touched, so a plain `pax-ocl ...` starts
// instantly. PAX_OCL_MPI=1 forces MPI on (singleton), PAX_OCL_MPI=0 forces it off.
// Construct exactly one, early in main(); it finalises MPI when destroyed.
#pragma once

#include <string>
#include <vector>

namespace paxocl::collectives {

class ProcessWorld {
 public:
  ProcessWorld(int* argc, char*** argv);
  ~ProcessWorld();
  ProcessWorld(const ProcessWorld&) = delete;
  ProcessWorld& operator=(const ProcessWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }  // among the processes on this host
  int local_size() const { return local_size_; }
  bool uses_mpi() const { return uses_mpi_; }
  const std::string& launcher() const { return launcher_; }  // "none", "mpirun", "srun", "pmix", "forced"
  bool thread_multiple() const { return thread_multiple_; }  // MPI_THREAD_MULTIPLE granted

  // Every rank's value, in rank order (collective: all ranks must call). Strings totalling more
  // than INT_MAX bytes (MPI's int counts) are a DeviceError on every rank alike.
  std::vector<int> all_gather(int value) const;
  std::vector<std::string> all_gather(const std::string& value) const;
  // Element-wise sums over all ranks, in place (collective). For small host-side statistics.
  void all_reduce_sum(std::vector<double>& values) const;
  void barrier() const;
  // Under srun, Slurm's view (SLURM_PROCID, SLURM_STEP_NUM_TASKS or SLURM_NTASKS) must match MPI's
  // rank and size: a mismatch (e.g. tasks that did not join one MPI job) is a ConfigError rather
  // than a silently wrong mesh. Skipped under mpirun, whose ranks all inherit the batch step's
  // SLURM_PROCID.
  void check_slurm_agrees() const;
  // Ends every process of the job with `exit_code` (MPI_Abort); plain exit() without MPI.
  [[noreturn]] void abort(int exit_code) const;

 private:
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  bool uses_mpi_ = false, thread_multiple_ = false;
  std::string launcher_ = "none";
};

}  // namespace paxocl::collectives
