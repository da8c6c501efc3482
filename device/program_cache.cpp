#include "device/program_cache.h"

#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/fnv1a.h"
#include "device/cl_error.h"
#include "device/device_fingerprint.h"

namespace paxocl::device {

namespace {

// File layout (little-endian host order; the cache is per host):
//   char[8] "PAXOCLPB" | u32 format | u64 key_len | key | u64 binary_len | binary | u64 fnv1a(binary)
constexpr char kMagic[8] = {'P', 'A', 'X', 'O', 'C', 'L', 'P', 'B'};
constexpr std::uint32_t kFormat = 1;

std::string cache_key(const DeviceInfo& d, std::string_view options, std::string_view source) {
  // '\n'-separated fields; the source goes last so it needs no escaping.
  return fmt::format("pax-ocl program cache v{}\n{}\n{}\n{}\n{}", kFormat, device_identity(d), d.opencl_version, options,
                     source);
}

std::string safe_stem(std::string_view name) {
  std::string s;
  for (char c : name) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') ? c : '_';
  return s.empty() ? "program" : s;
}

template <typename T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}
template <typename T>
bool take(std::string_view& in, T& value) {
  if (in.size() < sizeof value) return false;
  std::memcpy(&value, in.data(), sizeof value);
  in.remove_prefix(sizeof value);
  return true;
}

// The cached binary when the file exists, is intact and was written for exactly this key.
enum class Lookup { kAbsent, kUnusable, kFound };
Lookup read_cached(const std::filesystem::path& file, const std::string& key, std::string& binary) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return Lookup::kAbsent;
  if (!std::filesystem::is_regular_file(file, ec)) return Lookup::kUnusable;  // a FIFO would block the open below
  std::ifstream in(file, std::ios::binary);
  if (!in) return Lookup::kAbsent;
  const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string_view view(content);
  std::uint32_t format = 0;
  std::uint64_t key_len = 0, bin_len = 0, checksum = 0;
  if (view.size() < sizeof kMagic || std::memcmp(view.data(), kMagic, sizeof kMagic) != 0) return Lookup::kUnusable;
  view.remove_prefix(sizeof kMagic);
  if (!take(view, format) || format != kFormat || !take(view, key_len) || view.size() < key_len) return Lookup::kUnusable;
  if (view.substr(0, key_len) != key) return Lookup::kUnusable;
  view.remove_prefix(key_len);
  if (!take(view, bin_len) || view.size() != bin_len + sizeof checksum) return Lookup::kUnusable;
  binary.assign(view.substr(0, bin_len));
  view.remove_prefix(bin_len);
  if (!take(view, checksum) || checksum != fnv1a(binary)) return Lookup::kUnusable;
  return Lookup::kFound;
}

bool write_cached(const std::filesystem::path& file, const std::string& key, const std::string& binary) {
  std::string out(kMagic, sizeof kMagic);
  put(out, kFormat);
  put<std::uint64_t>(out, key.size());
  out += key;
  put<std::uint64_t>(out, binary.size());
  out += binary;
  put(out, fnv1a(binary));

  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  try {
    write_file_atomically(file, out);  // readers (other processes too) see the old file or the new, never half
    return true;
  } catch (const DataError&) {  // a read-only or full disk: the caller counts it, the build goes on
    return false;
  }
}

std::string build_log(cl_program program, cl_device_id device) {
  std::size_t size = 0;
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) != CL_SUCCESS) return "";
  std::string log(size, '\0');
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

// The binary of a program built for `device` (whichever position it has in the program's list).
std::string program_binary(cl_program program, cl_device_id device) {
  cl_uint num_devices = 0;
  check_cl(clGetProgramInfo(program, CL_PROGRAM_NUM_DEVICES, sizeof num_devices, &num_devices, nullptr),
           "clGetProgramInfo", "reading a program's device count");
  std::vector<cl_device_id> devices(num_devices);
  check_cl(clGetProgramInfo(program, CL_PROGRAM_DEVICES, sizeof(cl_device_id) * num_devices, devices.data(), nullptr),
           "clGetProgramInfo", "reading a program's devices");
  std::vector<std::size_t> sizes(num_devices);
  check_cl(clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(std::size_t) * num_devices, sizes.data(), nullptr),
           "clGetProgramInfo", "reading a program's binary sizes");
  std::vector<std::string> binaries(num_devices);
  std::vector<unsigned char*> pointers(num_devices);
  for (cl_uint i = 0; i < num_devices; ++i) {
    binaries[i].resize(sizes[i]);
    pointers[i] = reinterpret_cast<unsigned char*>(binaries[i].data());
  }
  check_cl(clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(unsigned char*) * num_devices, pointers.data(), nullptr),
           "clGetProgramInfo", "reading a program's binaries");
  for (cl_uint i = 0; i < num_devices; ++i) {
    if (devices[i] == device) return binaries[i];
  }
  return "";
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

ProgramCache::ProgramCache(std::filesystem::path dir, BinaryStore store) : dir_(std::move(dir)), store_(store) {}

std::filesystem::path ProgramCache::default_dir() {
  if (const char* env = std::getenv(kCacheDirEnvVar); env != nullptr) return env;  // "" disables
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::filesystem::path(xdg) / "pax-ocl" / "programs";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::filesystem::path(home) / ".cache" / "pax-ocl" / "programs";
  }
  return {};
}

namespace {
bool is_pocl(const DeviceInfo& device) {
  return device.platform_name.find("Portable Computing Language") != std::string::npos;
}

// PoCL's clang prints "N warnings generated." to stderr for nearly every program on CPUs without
// AVX-512 (-Wpsabi notes that float16 vectors change the ABI of calls, which its inlined kernels
// never make); -w keeps users' terminals clean. PoCL refuses -Wno-psabi as a build option.
std::string compiler_options(const DeviceInfo& device, std::string_view options) {
  std::string opts(options);
  if (is_pocl(device)) opts += opts.empty() ? "-w" : " -w";
  return opts;
}
}  // namespace

bool ProgramCache::stores_binaries_for(const DeviceInfo& device) const {
  if (dir_.empty()) return false;
  if (store_ == BinaryStore::kAlways || !is_pocl(device)) return true;
  const char* pocl_cache = std::getenv("POCL_KERNEL_CACHE");
  return pocl_cache != nullptr && std::string_view(pocl_cache) == "0";
}

std::filesystem::path ProgramCache::file_for(const DeviceInfo& device, std::string_view name,
                                             std::string_view source, std::string_view options) const {
  return dir_ / fmt::format("{}-{:016x}.bin", safe_stem(name), fnv1a(cache_key(device, compiler_options(device, options), source)));
}

ProgramCacheStats ProgramCache::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

Program ProgramCache::build(const Context& context, const DeviceInfo& device, std::string_view name,
                            std::string_view source, std::string_view options) {
  const std::string opts = compiler_options(device, options);
  const std::string key = cache_key(device, opts, source);
  const bool store = stores_binaries_for(device);
  const std::filesystem::path file = store ? file_for(device, name, source, options) : std::filesystem::path();

  if (!file.empty()) {
    std::string binary;
    const Lookup found = read_cached(file, key, binary);
    if (found == Lookup::kFound) {
      const auto* bytes = reinterpret_cast<const unsigned char*>(binary.data());
      const std::size_t size = binary.size();
      cl_int status = CL_SUCCESS, err = CL_SUCCESS;
      cl_program raw = clCreateProgramWithBinary(context.get(), 1, &device.id, &size, &bytes, &status, &err);
      ClHandle<cl_program> program(raw);
      const auto start = std::chrono::steady_clock::now();
      if (err == CL_SUCCESS && status == CL_SUCCESS &&
          clBuildProgram(raw, 1, &device.id, opts.c_str(), nullptr, nullptr) == CL_SUCCESS) {
        std::lock_guard lock(mutex_);
        ++stats_.hits;
        stats_.build_ms += ms_since(start);
        return Program(std::move(program), std::string(name));
      }
      spdlog::warn("program cache: the driver rejected cached binary {}; rebuilding from source", file.string());
    }
    if (found != Lookup::kAbsent) {
      std::lock_guard lock(mutex_);
      ++stats_.rejected;
    }
  }

  const char* text = source.data();
  const std::size_t length = source.size();
  cl_int err = CL_SUCCESS;
  cl_program raw = clCreateProgramWithSource(context.get(), 1, &text, &length, &err);
  check_cl(err, "clCreateProgramWithSource", fmt::format("creating program '{}'", name));
  ClHandle<cl_program> program(raw);
  const auto start = std::chrono::steady_clock::now();
  const cl_int build_err = clBuildProgram(raw, 1, &device.id, opts.c_str(), nullptr, nullptr);
  const double build_ms = ms_since(start);
  if (build_err == CL_BUILD_PROGRAM_FAILURE || build_err == CL_COMPILE_PROGRAM_FAILURE) {
    throw ProgramBuildError(name, device.name, build_log(raw, device.id));
  }
  check_cl(build_err, "clBuildProgram", fmt::format("building program '{}' with options '{}'", name, options));

  bool stored = true;
  if (!file.empty()) {
    const std::string binary = program_binary(raw, device.id);
    stored = !binary.empty() && write_cached(file, key, binary);
    if (!stored) spdlog::warn("program cache: could not write {}; later runs will compile again", file.string());
  }
  std::lock_guard lock(mutex_);
  if (file.empty() && !dir_.empty()) {
    ++stats_.driver_cached;
  } else {
    ++stats_.misses;
  }
  stats_.build_ms += build_ms;
  if (!stored) ++stats_.write_failures;
  return Program(std::move(program), std::string(name));
}

}  // namespace paxocl::device
