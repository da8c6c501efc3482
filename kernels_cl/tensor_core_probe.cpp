#include "kernels_cl/tensor_core_probe.h"

#include <array>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "device/buffer.h"
#include "kernels_cl/program_loader.h"

namespace paxocl::kernels {

namespace {

bool contains(const std::string& text, std::string_view word) { return text.find(word) != std::string::npos; }

// The first line of an error (build logs run long), capped.
std::string short_reason(const std::exception& e) {
  std::string s = e.what();
  if (const auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  if (s.size() > 200) s = s.substr(0, 200) + "...";
  return s;
}

enum class Path { kBF16, kF16, kTF32 };

// Small integers, exact in every input format and in float32 sums.
float a_value(std::size_t r, std::size_t c) { return static_cast<float>(static_cast<int>((r * 7 + c * 3) % 9) - 4); }
float b_value(std::size_t r, std::size_t c) { return static_cast<float>(static_cast<int>((r * 5 + c * 11) % 7) - 3); }

// Runs the probe kernel for `path` on a fresh context of `info` (a faulting kernel cannot break
// the caller's); "" when the tile is exact, else why not.
std::string probe_path(const device::DeviceInfo& info, device::ProgramCache& cache, Path path) {
  static constexpr std::array<const char*, 3> kNames = {"bf16", "f16", "tf32"};
  const char* name = kNames[static_cast<std::size_t>(path)];
  const std::size_t k = path == Path::kTF32 ? 8 : 16;  // m16n8k16, m16n8k8
  try {
    device::Device dev(info);
    static constexpr std::array<const char*, 3> kDefines = {"-DPROBE_BF16", "-DPROBE_F16", "-DPROBE_TF32"};
    const device::Program program =
        load_ptx_program(cache, dev, "tensor_core_probe", kDefines[static_cast<std::size_t>(path)]);
    device::Kernel kernel(program, "tc_probe");
    std::vector<float> a(16 * k), b(k * 8), want(16 * 8, 0.0f);
    for (std::size_t r = 0; r < 16; ++r)
      for (std::size_t c = 0; c < k; ++c) a[r * k + c] = a_value(r, c);
    for (std::size_t r = 0; r < k; ++r)
      for (std::size_t c = 0; c < 8; ++c) b[r * 8 + c] = b_value(r, c);
    for (std::size_t r = 0; r < 16; ++r)
      for (std::size_t c = 0; c < 8; ++c)
        for (std::size_t p = 0; p < k; ++p) want[r * 8 + c] += a[r * k + p] * b[p * 8 + c];
    device::Buffer<float> d(dev.context(), want.size(), "tc_probe.d");
    const std::array<std::size_t, 1> group = {32};
    if (path == Path::kTF32) {
      device::Buffer<float> ab(dev.context(), a.size(), "tc_probe.a"), bb(dev.context(), b.size(), "tc_probe.b");
      dev.queue().write(ab, std::span<const float>(a));
      dev.queue().write(bb, std::span<const float>(b));
      kernel.set_args(ab, bb, d);
      dev.queue().launch(kernel, group, group);
    } else {
      const auto to16 = [&](const std::vector<float>& v) {
        std::vector<cl_ushort> out;
        for (float x : v) out.push_back(path == Path::kBF16 ? device::float_to_bf16(x) : device::float_to_half(x));
        return out;
      };
      const std::vector<cl_ushort> a16 = to16(a), b16 = to16(b);
      device::Buffer<cl_ushort> ab(dev.context(), a16.size(), "tc_probe.a");
      device::Buffer<cl_ushort> bb(dev.context(), b16.size(), "tc_probe.b");
      dev.queue().write(ab, std::span<const cl_ushort>(a16));
      dev.queue().write(bb, std::span<const cl_ushort>(b16));
      kernel.set_args(ab, bb, d);
      dev.queue().launch(kernel, group, group);
    }
    std::vector<float> got(want.size());
    dev.queue().read(d, std::span<float>(got));
    int wrong = 0;
    for (std::size_t i = 0; i < want.size(); ++i) wrong += got[i] != want[i];
    if (wrong != 0) return fmt::format("{}: {} of 128 tile elements wrong", name, wrong);
    return "";
  } catch (const std::exception& e) {
    return fmt::format("{}: {}", name, short_reason(e));
  }
}

TensorCores probe(const device::DeviceInfo& info, device::ProgramCache& cache) {
  TensorCores tc;
  if (const char* env = std::getenv(kTensorCoresEnvVar); env != nullptr && std::string(env) == "0") {
    tc.reason = fmt::format("{}=0", kTensorCoresEnvVar);
    return tc;
  }
  if (!is_nvidia(info)) {
    tc.reason = fmt::format("not an NVIDIA device: {}", info.vendor);
    return tc;
  }
  std::vector<std::string> reasons;
  for (const Path p : {Path::kBF16, Path::kF16, Path::kTF32}) {
    const std::string why = probe_path(info, cache, p);
    (p == Path::kBF16 ? tc.bf16 : p == Path::kF16 ? tc.f16 : tc.tf32) = why.empty();
    if (!why.empty()) reasons.push_back(why);
  }
  for (const std::string& r : reasons) tc.reason += (tc.reason.empty() ? "" : "; ") + r;
  return tc;
}

}  // namespace

std::string TensorCores::describe() const {
  if (!bf16 && !f16) return fmt::format("no tensor cores ({}): float32-accumulating GEMM", reason);
  std::string paths = bf16 && f16 ? "bf16/f16" : bf16 ? "bf16" : "f16";
  if (tf32) paths += " tf32";
  return fmt::format("tensor cores: mma.sync {}{}", paths, reason.empty() ? "" : fmt::format(" (off: {})", reason));
}

bool is_nvidia(const device::DeviceInfo& device) {
  return contains(device.vendor, "NVIDIA") || contains(device.platform_name, "NVIDIA");
}

bool is_ptx_program(std::string_view name) {
  for (std::string_view p : kPtxPrograms) {
    if (p == name) return true;
  }
  return false;
}

const TensorCores& probe_tensor_cores(const device::DeviceInfo& device, device::ProgramCache& cache) {
  static std::mutex mutex;
  static std::map<cl_device_id, TensorCores> results;  // per device, for the process
  std::lock_guard<std::mutex> lock(mutex);
  auto it = results.find(device.id);
  if (it == results.end()) {
    it = results.emplace(device.id, probe(device, cache)).first;
    spdlog::info("{}: {}", device.name, it->second.describe());
  }
  return it->second;
}

device::Program load_ptx_program(device::ProgramCache& cache, const device::Device& device, std::string_view name,
                                 std::string_view extra_options) {
  if (!is_nvidia(device.info())) {
    throw std::logic_error(fmt::format("PTX program '{}' requested for {} ({}), which is not an NVIDIA device", name,
                                       device.info().name, device.info().vendor));
  }
  if (!is_ptx_program(name)) throw std::logic_error(fmt::format("'{}' is not a PTX program", name));
  return load_program(cache, device, name, fmt::format("-DPAX_NVIDIA_PTX {}", extra_options));
}

}  // namespace paxocl::kernels
