// One process per device, started by mpirun (or Slurm): the MPI world is the group. MpiCommunicator carries the
// collectives for virtual CPU devices (one per rank); for GPUs, MPI only bootstraps NCCL (mpi_broadcast_nccl_id).
// Built when CMake finds MPI (GCNPART_WITH_MPI); launched_under_mpi() works without it.
#pragma once

#include <cstdint>

#include "engine/communicator.hpp"
#include "engine/nccl_communicator.hpp"

namespace gcnpart::engine {

/// True when this process was started by mpirun / srun (OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK set).
bool launched_under_mpi() noexcept;
/// Whether this binary was built with MPI.
bool mpi_available() noexcept;

/// Initialises MPI once (idempotent) and finalises it at exit. @throws Error when built without MPI.
void mpi_init();
int mpi_rank();
int mpi_size();
/// Rank among the processes on the same host (for picking the local GPU).
int mpi_local_rank();
/// Rank 0 creates the NCCL id and broadcasts it.
NcclId mpi_broadcast_nccl_id();
/// Every rank's `bytes` bytes, concatenated in rank order into `all` (size() * bytes).
void mpi_allgather_bytes(const void* mine, std::size_t bytes, void* all);
/// Maximum of a double over ranks (host-side figures: e.g. timings).
double mpi_allreduce_max(double value);
/// Terminates every rank (MPI_Abort) after printing `message` on this rank: no rank is left waiting.
[[noreturn]] void mpi_abort(const char* message, int code);

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator();
  [[nodiscard]] int rank() const noexcept override { return rank_; }
  [[nodiscard]] int size() const noexcept override { return size_; }
  void barrier(const kernels::Context& ctx) override;

 protected:
  void do_allreduce_sum(const kernels::Context& ctx, float* data, std::int64_t count) override;
  void do_allreduce_sum(const kernels::Context& ctx, std::int64_t* data, std::int64_t count) override;
  void do_all_gather(const kernels::Context& ctx, const float* send, std::int64_t count, float* recv) override;
  void do_reduce_scatter_sum(const kernels::Context& ctx, const float* send, std::int64_t count,
                             float* recv) override;
  void do_send(const kernels::Context& ctx, const float* data, std::int64_t count, int peer) override;
  void do_recv(const kernels::Context& ctx, float* data, std::int64_t count, int peer) override;
  void do_all_to_all_v(const kernels::Context& ctx, const void* send, const std::vector<std::int64_t>& send_offsets,
                       void* recv, const std::vector<std::int64_t>& recv_offsets) override;

 private:
  int rank_ = 0, size_ = 1;
};

}  // namespace gcnpart::engine
