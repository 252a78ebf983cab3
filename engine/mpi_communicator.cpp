#include "engine/mpi_communicator.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "base/error.hpp"

#ifdef GCNPART_HAVE_MPI
#include <mpi.h>
#endif

namespace gcnpart::engine {

bool launched_under_mpi() noexcept {
  // The one documented getenv of the libraries: how a launcher says it started us (tests/source_rules_test.cpp).
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr ||
         std::getenv("PMIX_RANK") != nullptr;
}

#ifdef GCNPART_HAVE_MPI

bool mpi_available() noexcept { return true; }

namespace {
void check(int rc, const char* call) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw DeviceError("MPI", call, "mpi_communicator.cpp", std::string(msg, static_cast<std::size_t>(len)));
  }
}
void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}
void expect_host(const kernels::Context& ctx) {
  GCNPART_EXPECTS(ctx.backend == Backend::kCpu, "the MPI communicator serves CPU devices; GPUs use NCCL");
}
}  // namespace

void mpi_init() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  // Errors come back as codes (turned into DeviceError) instead of killing the job silently.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::atexit(finalize_at_exit);
}

int mpi_rank() {
  int r = 0;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &r), "MPI_Comm_rank");
  return r;
}

int mpi_size() {
  int s = 1;
  check(MPI_Comm_size(MPI_COMM_WORLD, &s), "MPI_Comm_size");
  return s;
}

int mpi_local_rank() {
  MPI_Comm local;
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local), "MPI_Comm_split_type");
  int r = 0;
  MPI_Comm_rank(local, &r);
  MPI_Comm_free(&local);
  return r;
}

NcclId mpi_broadcast_nccl_id() {
  NcclId id{};
  if (mpi_rank() == 0) id = nccl_unique_id();
  check(MPI_Bcast(id.data(), static_cast<int>(id.size()), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
  return id;
}

void mpi_allgather_bytes(const void* mine, std::size_t bytes, void* all) {
  check(MPI_Allgather(mine, static_cast<int>(bytes), MPI_BYTE, all, static_cast<int>(bytes), MPI_BYTE, MPI_COMM_WORLD),
        "MPI_Allgather");
}

double mpi_allreduce_max(double value) {
  double out = value;
  check(MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  return out;
}

void mpi_abort(const char* message, int code) {
  std::fprintf(stderr, "%s\n", message);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

MpiCommunicator::MpiCommunicator() {
  mpi_init();
  rank_ = mpi_rank();
  size_ = mpi_size();
}

void MpiCommunicator::do_allreduce_sum(const kernels::Context& ctx, float* data, std::int64_t count) {
  expect_host(ctx);
  check(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
        "MPI_Allreduce");
}

void MpiCommunicator::do_allreduce_sum(const kernels::Context& ctx, std::int64_t* data, std::int64_t count) {
  expect_host(ctx);
  check(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD),
        "MPI_Allreduce");
}

void MpiCommunicator::do_all_gather(const kernels::Context& ctx, const float* send, std::int64_t count, float* recv) {
  expect_host(ctx);
  check(MPI_Allgather(send, static_cast<int>(count), MPI_FLOAT, recv, static_cast<int>(count), MPI_FLOAT,
                      MPI_COMM_WORLD),
        "MPI_Allgather");
}

void MpiCommunicator::do_reduce_scatter_sum(const kernels::Context& ctx, const float* send, std::int64_t count,
                                         float* recv) {
  expect_host(ctx);
  check(MPI_Reduce_scatter_block(send, recv, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
        "MPI_Reduce_scatter_block");
}

void MpiCommunicator::do_send(const kernels::Context& ctx, const float* data, std::int64_t count, int peer) {
  expect_host(ctx);
  check(MPI_Send(data, static_cast<int>(count), MPI_FLOAT, peer, 7, MPI_COMM_WORLD), "MPI_Send");
}

void MpiCommunicator::do_recv(const kernels::Context& ctx, float* data, std::int64_t count, int peer) {
  expect_host(ctx);
  check(MPI_Recv(data, static_cast<int>(count), MPI_FLOAT, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
}

void MpiCommunicator::do_all_to_all_v(const kernels::Context& ctx, const void* send,
                                      const std::vector<std::int64_t>& send_offsets, void* recv,
                                      const std::vector<std::int64_t>& recv_offsets) {
  expect_host(ctx);
  // MPI counts in int: bytes per block and offsets must stay below 2^31.
  const auto k = static_cast<std::size_t>(size_);
  GCNPART_EXPECTS(send_offsets[k] <= std::numeric_limits<int>::max() && recv_offsets[k] <= std::numeric_limits<int>::max(),
                  "MPI all_to_all_v moves at most 2^31 - 1 bytes per rank");
  std::vector<int> sc(k), sd(k), rc(k), rd(k);
  for (std::size_t q = 0; q < k; ++q) {
    sd[q] = static_cast<int>(send_offsets[q]);
    sc[q] = static_cast<int>(send_offsets[q + 1] - send_offsets[q]);
    rd[q] = static_cast<int>(recv_offsets[q]);
    rc[q] = static_cast<int>(recv_offsets[q + 1] - recv_offsets[q]);
  }
  check(MPI_Alltoallv(send, sc.data(), sd.data(), MPI_BYTE, recv, rc.data(), rd.data(), MPI_BYTE, MPI_COMM_WORLD),
        "MPI_Alltoallv");
}

void MpiCommunicator::barrier(const kernels::Context& ctx) {
  expect_host(ctx);
  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

#else  // built without MPI

bool mpi_available() noexcept { return false; }
namespace {
[[noreturn]] void no_mpi() {
  throw InvalidInput::parameter("launch", "mpirun", "a gcnpart built with MPI (apt-get install libopenmpi-dev, "
                                                   "then rebuild)");
}
}  // namespace
void mpi_init() { no_mpi(); }
int mpi_rank() { no_mpi(); }
int mpi_size() { no_mpi(); }
int mpi_local_rank() { no_mpi(); }
NcclId mpi_broadcast_nccl_id() { no_mpi(); }
double mpi_allreduce_max(double) { no_mpi(); }
void mpi_allgather_bytes(const void*, std::size_t, void*) { no_mpi(); }
void mpi_abort(const char* message, int code) {
  std::fprintf(stderr, "%s\n", message);
  std::_Exit(code);
}
MpiCommunicator::MpiCommunicator() { no_mpi(); }
void MpiCommunicator::do_allreduce_sum(const kernels::Context&, float*, std::int64_t) { no_mpi(); }
void MpiCommunicator::do_allreduce_sum(const kernels::Context&, std::int64_t*, std::int64_t) { no_mpi(); }
void MpiCommunicator::do_all_gather(const kernels::Context&, const float*, std::int64_t, float*) { no_mpi(); }
void MpiCommunicator::do_reduce_scatter_sum(const kernels::Context&, const float*, std::int64_t, float*) { no_mpi(); }
void MpiCommunicator::barrier(const kernels::Context&) { no_mpi(); }
void MpiCommunicator::do_send(const kernels::Context&, const float*, std::int64_t, int) { no_mpi(); }
void MpiCommunicator::do_recv(const kernels::Context&, float*, std::int64_t, int) { no_mpi(); }
void MpiCommunicator::do_all_to_all_v(const kernels::Context&, const void*, const std::vector<std::int64_t>&, void*,
                                      const std::vector<std::int64_t>&) {
  no_mpi();
}

#endif

}  // namespace gcnpart::engine
