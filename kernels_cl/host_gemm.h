// Host GEMM libraries (BLIS, oneDNN) on a CPU device: each call is an OpenCL native kernel that
// runs the library on the operands' own memory, in queue order, with events like any kernel.
// Operands reach it as host pointers from clEnqueueMapBuffer (zero-copy on PoCL), so devices
// sharing a context (the ICI ring) see coherent memory like any command's.
#pragma once

#include <cstddef>
#include <string>

#include "kernels_cl/gemm.h"

namespace paxocl::kernels {

// What a host GEMM's native kernel receives (copied by the runtime). Row-major throughout:
//   C (m, n) = alpha op(A) op(B) + beta C for each of `batch` matrices;
// a, b, c point at the first element of each operand's first matrix; A is stored (m, k), or (k, m)
// when a_transposed, B (k, n) or (n, k), C (m, n); ld* are the stored row lengths and *_stride
// the elements between batch entries. With k == 0, a and b are null (nothing of them is read).
struct HostGemmArgs {
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  std::size_t lda = 0, ldb = 0, ldc = 0;
  std::size_t a_stride = 0, b_stride = 0, c_stride = 0;
  std::size_t m = 0, n = 0, k = 0, batch = 1;
  bool a_transposed = false, b_transposed = false;
  device::DType a_dtype = device::DType::kF32, b_dtype = device::DType::kF32, c_dtype = device::DType::kF32;
  float alpha = 1, beta = 0;
  unsigned threads = 1;          // host threads this call may use
  const void* library = nullptr;  // the library's own state for the call; outlives the queue's commands
};

// `bytes` of `buffer` from byte `offset` mapped for a native kernel enqueued after it (map and
// unmap in queue order, neither waits); unmapped by unmap() after that kernel, or, when an
// exception unwinds first, by the destructor (which logs a failure instead of throwing).
class HostMapping {
 public:
  HostMapping(device::Queue& queue, cl_mem buffer, std::size_t offset, std::size_t bytes, cl_map_flags flags);
  HostMapping(const HostMapping&) = delete;
  HostMapping& operator=(const HostMapping&) = delete;
  ~HostMapping();
  void* get() const { return pointer_; }
  void unmap();  // throws if the driver refuses

 private:
  device::Queue& queue_;
  cl_mem buffer_;
  void* pointer_;
};

// The bytes an operand's matrices span from its first element: `rows` x `cols` as stored, `batch`
// of them `batch_stride` apart, and that `outer` times, `outer_stride` elements apart.
std::size_t span_bytes(const GemmOperand& x, std::size_t rows, std::size_t cols, std::size_t batch,
                       std::size_t outer = 1, std::size_t outer_stride = 0);

// Whether `device` can run host GEMMs: a CPU device that runs native kernels (PoCL's do).
bool host_gemm_available(const device::Device& device);
// Throws ConfigError naming the device and the GEMM policy when it cannot.
void require_host_gemm(const device::Device& device, const std::string& policy);

// The host threads one call on `device` may use: its compute units shared with the process's other
// open CPU devices and the job's other processes on this host (PoCL reports every core for each
// device, and they run at once), so POCL_DEVICES="pthread pthread" on 2 cores gives each 1 thread.
unsigned host_gemm_threads(const device::Device& device);

// Maps the operands of C = alpha op(A) op(B) + beta C (over `outer`'s repetitions too: the kernel,
// which knows them from `library`, runs them all), enqueues `kernel` (named `name` in traces) with
// their host pointers in a HostGemmArgs whose `library` is `library`, and unmaps them after it,
// all in queue order; returns without waiting. Empty shapes (m, n or batch 0) enqueue nothing.
void enqueue_host_gemm(device::Queue& queue, const std::string& name, void (*kernel)(void*), const GemmShape& shape,
                       float alpha, const GemmOperand& a, const GemmOperand& b, float beta, const GemmOperand& c,
                       unsigned threads, const void* library = nullptr, const GemmOuterBatch& outer = {});

}  // namespace paxocl::kernels
