#include "kernels_cl/cpu_flash_attention.h"

#include <cstdlib>
#include <exception>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/errors.h"
#include "device/queue.h"
#include "kernels_cl/host_flash_attention.h"
#include "kernels_cl/host_gemm.h"
#include "kernels_cl/kernel_set.h"

namespace paxocl::kernels {

namespace {

// PAX_OCL_CPU_FLASH: unset or 1 on, 0 off; ConfigError for anything else.
bool switched_off() {
  const char* value = std::getenv("PAX_OCL_CPU_FLASH");
  if (value == nullptr || std::string(value) == "1") return false;
  if (std::string(value) == "0") return true;
  throw ConfigError(fmt::format("PAX_OCL_CPU_FLASH='{}': use 0 (attention on CPU devices as GEMMs and softmax "
                                "kernels) or 1 (flash attention on the host, the default)",
                                value));
}

template <typename Args>
struct NativeCall {
  Args args;
  unsigned threads;
  device::NativeFailure* failure;  // the queue's
};

template <typename Args, void (*Run)(const Args&, unsigned)>
void native_kernel(void* p) {
  const auto& call = *static_cast<const NativeCall<Args>*>(p);
  try {
    Run(call.args, call.threads);
  } catch (const std::exception& e) {  // must not cross into the OpenCL runtime
    call.failure->record(std::string("CPU flash attention failed: ") + e.what());
  }
}

}  // namespace

std::string cpu_flash_refusal(const device::DeviceInfo& device) {
  if (device.kind != device::DeviceKind::kCpu) return "not a CPU device";
  if (!device.native_kernels) return "the device runs no native kernels";
  if (const KernelVariant set = requested_variant(device); set != KernelVariant::kCpu)
    return fmt::format("the device runs the {} kernel set", to_string(set));
  if (switched_off()) return "PAX_OCL_CPU_FLASH=0";
  return {};
}

bool uses_cpu_flash_attention(const device::DeviceInfo& device) { return cpu_flash_refusal(device).empty(); }

bool fused_attention(const device::DeviceInfo& device, std::size_t head_size) {
  return uses_flash_attention(device, head_size) || uses_cpu_flash_attention(device);
}

CpuFlashAttention::CpuFlashAttention(device::Device& device) : device_(device) {
  if (const std::string why = cpu_flash_refusal(device.info()); !why.empty())
    throw DeviceError(fmt::format("CPU flash attention cannot run on '{}': {}", device.info().name, why));
}

CpuFlashAttention::~CpuFlashAttention() {
  try {
    device_.queue().finish();
  } catch (const std::exception& e) {
    spdlog::error("CPU flash attention: waiting for its queued calls: {}", e.what());
  }
}

std::string CpuFlashAttention::describe() const {
  const int threads = host_gemm_threads(device_);
  return fmt::format("flash attention on the host (one native kernel per call: blocks of {} queries, oneDNN's sgemm, "
                     "softmax in {}, {} thread{})",
                     kHostFlashQueryBlock, host_vector_unit_name(widest_host_vector_unit()), threads, threads == 1 ? "" : "s");
}

void CpuFlashAttention::forward(const ActBuffer& q, std::size_t q_stride, const KeyValueRows& kv, ActBuffer& out,
                                std::size_t out_stride, FloatBuffer& lse, std::size_t stats_stride,
                                const AttentionHeads& heads, std::size_t B, std::size_t queries, std::size_t p0) {
  check_flash_forward("CPU flash attention (forward)", q, q_stride, kv, out, out_stride, lse, stats_stride, heads, B,
                      queries, p0);
  device_.queue().native_failure()->throw_if_recorded();
  if (B == 0 || queries == 0) return;
  device::Queue& queue = device_.queue();
  // Whole buffers, each mapped once (training passes q, k and v in one); unmapped after the kernel.
  HostMapping mq(queue, q.get(), 0, q.bytes(), CL_MAP_READ);
  std::optional<HostMapping> mkv;
  if (kv.buffer->get() != q.get()) mkv.emplace(queue, kv.buffer->get(), 0, kv.buffer->bytes(), CL_MAP_READ);
  HostMapping mout(queue, out.get(), 0, out.bytes(), CL_MAP_READ | CL_MAP_WRITE);
  HostMapping mlse(queue, lse.get(), 0, lse.bytes(), CL_MAP_READ | CL_MAP_WRITE);
  const HostFlashForward args{.q = mq.get(), .q_stride = q_stride, .kv = mkv ? mkv->get() : mq.get(),
                              .kv_rows_per_sequence = kv.rows_per_sequence, .kv_stride = kv.stride,
                              .k_col = kv.k_col, .v_col = kv.v_col, .out = mout.get(), .out_stride = out_stride,
                              .lse = static_cast<float*>(mlse.get()), .stats_stride = stats_stride, .act = q.dtype(),
                              .heads = heads, .B = B, .queries = queries, .p0 = p0};
  const NativeCall<HostFlashForward> call{args, host_gemm_threads(device_), queue.native_failure()};
  queue.native("cpu_flash_attention_forward", native_kernel<HostFlashForward, host_flash_forward>, &call, sizeof call);
  mlse.unmap();
  mout.unmap();
  if (mkv) mkv->unmap();
  mq.unmap();
}

void CpuFlashAttention::backward(const ActBuffer& qkv, std::size_t width, std::size_t k_col, std::size_t v_col,
                                 const ActBuffer& out, const ActBuffer& dout, const FloatBuffer& lse, ActBuffer& dqkv,
                                 const AttentionHeads& heads, std::size_t B, std::size_t T) {
  check_flash_backward("CPU flash attention (backward)", qkv, width, k_col, v_col, out, dout, lse, dqkv, heads, B, T);
  device_.queue().native_failure()->throw_if_recorded();
  if (B == 0 || T == 0) return;
  device::Queue& queue = device_.queue();
  HostMapping mqkv(queue, qkv.get(), 0, qkv.bytes(), CL_MAP_READ);
  HostMapping mout(queue, out.get(), 0, out.bytes(), CL_MAP_READ);
  HostMapping mdout(queue, dout.get(), 0, dout.bytes(), CL_MAP_READ);
  HostMapping mlse(queue, lse.get(), 0, lse.bytes(), CL_MAP_READ);
  HostMapping mdqkv(queue, dqkv.get(), 0, dqkv.bytes(), CL_MAP_READ | CL_MAP_WRITE);
  const HostFlashBackward args{.qkv = mqkv.get(), .width = width, .k_col = k_col, .v_col = v_col, .out = mout.get(),
                               .dout = mdout.get(), .lse = static_cast<const float*>(mlse.get()), .dqkv = mdqkv.get(),
                               .act = qkv.dtype(), .heads = heads, .B = B, .T = T};
  const NativeCall<HostFlashBackward> call{args, host_gemm_threads(device_), queue.native_failure()};
  queue.native("cpu_flash_attention_backward", native_kernel<HostFlashBackward, host_flash_backward>, &call,
               sizeof call);
  mdqkv.unmap();
  mlse.unmap();
  mdout.unmap();
  mout.unmap();
  mqkv.unmap();
}

}  // namespace paxocl::kernels
