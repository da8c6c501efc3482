#include "collectives/process_world.h"

#include <mpi.h>

#include <cstdlib>
#include <cstring>

#include "collectives/mpi_chunks.h"
#include "common/errors.h"

namespace paxocl::collectives {

namespace {

bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0';
}

// Which launcher started us, or "" when none did.
std::string detect_launcher() {
  if (const char* forced = std::getenv("PAX_OCL_MPI"); forced != nullptr && *forced != '\0') {
    if (std::strcmp(forced, "0") == 0) return "";
    if (std::strcmp(forced, "1") == 0) return "forced";
    throw ConfigError("PAX_OCL_MPI=" + std::string(forced) + ": use 1 (force MPI on) or 0 (force it off)");
  }
  if (env_set("OMPI_COMM_WORLD_SIZE")) return "mpirun";
  if (env_set("PMIX_RANK")) return env_set("SLURM_STEP_ID") ? "srun" : "pmix";
  // pax-ocl links Debian's Open MPI, which joins jobs through PMIx only: under srun --mpi=none or
  // --mpi=pmi2 (or MPICH's mpiexec) MPI_Init would abort with pages of text. Several tasks without
  // PMIx cannot be wired up, so say how to launch instead.
  const bool slurm_multi = env_set("SLURM_STEP_ID") && env_set("SLURM_NTASKS") && std::atoi(std::getenv("SLURM_NTASKS")) > 1;
  if (slurm_multi || env_set("PMI_RANK")) {
    throw ConfigError(std::string("started by ") + (env_set("SLURM_STEP_ID") ? "srun" : "a PMI-1/2 launcher") +
                      " without PMIx, which this build's Open MPI cannot join; launch with `srun --mpi=pmix` or "
                      "Open MPI's mpirun");
  }
  return "";
}

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(code, text, &len);
  throw DeviceError(std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(len)));
}

}  // namespace

ProcessWorld::ProcessWorld(int* argc, char*** argv) {
  const std::string launcher = detect_launcher();
  if (launcher.empty()) return;
  int provided = MPI_THREAD_SINGLE;
  // THREAD_MULTIPLE: the collectives' progress thread calls MPI beside the main thread.
  check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
  uses_mpi_ = true;
  launcher_ = launcher;
  thread_multiple_ = provided == MPI_THREAD_MULTIPLE;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
  MPI_Comm local = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local),
            "MPI_Comm_split_type");
  MPI_Comm_rank(local, &local_rank_);
  MPI_Comm_size(local, &local_size_);
  MPI_Comm_free(&local);
}

void ProcessWorld::check_slurm_agrees() const {
  if (launcher_ == "mpirun" || !env_set("SLURM_STEP_ID") || !env_set("SLURM_PROCID")) return;  // not an srun task
  const int procid = std::atoi(std::getenv("SLURM_PROCID"));
  const char* ntasks = env_set("SLURM_STEP_NUM_TASKS") ? std::getenv("SLURM_STEP_NUM_TASKS") : std::getenv("SLURM_NTASKS");
  const int tasks = ntasks != nullptr ? std::atoi(ntasks) : size_;
  if (procid != rank_ || tasks != size_) {
    throw ConfigError("Slurm says task " + std::to_string(procid) + " of " + std::to_string(tasks) + " but MPI says rank " +
                      std::to_string(rank_) + " of " + std::to_string(size_) +
                      "; launch with `srun --mpi=pmix` (one MPI job for the whole step), or with mpirun inside the allocation");
  }
}

ProcessWorld::~ProcessWorld() {
  if (uses_mpi_) MPI_Finalize();
}

std::vector<int> ProcessWorld::all_gather(int value) const {
  std::vector<int> all(static_cast<std::size_t>(size_), value);
  if (uses_mpi_) check_mpi(MPI_Allgather(&value, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD), "MPI_Allgather");
  return all;
}

std::vector<std::string> ProcessWorld::all_gather(const std::string& value) const {
  if (!uses_mpi_) return {value};
  // MPI counts are int: every process learns every length first (-1: too long), so all agree to
  // refuse a gather whose strings or total do not fit instead of some of them calling MPI.
  const std::vector<int> lengths =
      all_gather(value.size() > mpi_chunks::kMaxCount ? -1 : static_cast<int>(value.size()));
  std::vector<int> offsets(lengths.size(), 0);
  std::size_t total = 0;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    if (lengths[i] < 0 || total + static_cast<std::size_t>(lengths[i]) > mpi_chunks::kMaxCount) {
      throw DeviceError("gathering strings from every process: more than INT_MAX bytes (rank " + std::to_string(i) +
                        "'s string is too long)");
    }
    offsets[i] = static_cast<int>(total);
    total += static_cast<std::size_t>(lengths[i]);
  }
  std::string joined(total, '\0');
  check_mpi(MPI_Allgatherv(value.data(), static_cast<int>(value.size()), MPI_CHAR, joined.data(), lengths.data(),
                           offsets.data(), MPI_CHAR, MPI_COMM_WORLD),
            "MPI_Allgatherv");
  std::vector<std::string> all;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    all.push_back(joined.substr(static_cast<std::size_t>(offsets[i]), static_cast<std::size_t>(lengths[i])));
  }
  return all;
}

void ProcessWorld::all_reduce_sum(std::vector<double>& values) const {
  if (!uses_mpi_ || size_ == 1) return;
  for (const mpi_chunks::Range& w : mpi_chunks::windows(values.size(), mpi_chunks::kMaxCount)) {  // int counts
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, values.data() + w.begin, static_cast<int>(w.end - w.begin), MPI_DOUBLE,
                            MPI_SUM, MPI_COMM_WORLD),
              "MPI_Allreduce");
  }
}

void ProcessWorld::barrier() const {
  if (uses_mpi_) check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

void ProcessWorld::abort(int exit_code) const {
  if (uses_mpi_) MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::exit(exit_code);
}

}  // namespace paxocl::collectives
