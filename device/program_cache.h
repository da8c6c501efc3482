// ProgramCache: builds OpenCL programs once and keeps their binaries on disk, so that later
// processes skip the compiler (PoCL needs seconds per program; GPU drivers too, at scale).
//
// Location: $PAX_OCL_CACHE_DIR, else $XDG_CACHE_HOME/pax-ocl/programs, else
// ~/.cache/pax-ocl/programs. An empty directory path disables the disk cache.
//
// Key: device name, vendor, driver version, platform version, device OpenCL version, build options
// and the full source. The file name holds a 64-bit hash of the key; the file also stores the key
// itself, which is compared on load, so a hash collision or a stale file is a miss, never a wrong
// program. A binary the driver rejects is rebuilt from source and rewritten. Files are written
// through common/atomic_file.h, so concurrent processes never see a partial file.
//
// Drivers with a compiled-kernel cache of their own (PoCL: $POCL_CACHE_DIR, on unless
// POCL_KERNEL_CACHE=0) get no binary files by default: they already skip the compiler on later
// runs, and asking PoCL for a program's binary makes it code-generate every kernel once more, for
// any work-group size, which nearly doubled a cold first step (15.3 s against 11.1 s, 2 cores).
//
// Thread-safe: several threads may build on different devices at once.
#pragma once

#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>

#include "device/context.h"
#include "device/device_info.h"
#include "device/program.h"

namespace paxocl::device {

inline constexpr const char* kCacheDirEnvVar = "PAX_OCL_CACHE_DIR";

struct ProgramCacheStats {
  int hits = 0;           // built from a cached binary
  int misses = 0;         // built from source (no usable cache file), binary stored
  int driver_cached = 0;  // built from source through the driver's own kernel cache (no file)
  int rejected = 0;       // cache file present but unusable (corrupt, other key, driver refused)
  int write_failures = 0; // could not store a binary (read-only or full disk); not fatal
  double build_ms = 0;    // wall time spent in clBuildProgram, both paths
};

// kAlways stores binaries for every driver (tests of the file format, drivers whose cache is off).
enum class BinaryStore { kUnlessDriverCaches, kAlways };

class ProgramCache {
 public:
  explicit ProgramCache(std::filesystem::path dir = default_dir(),
                        BinaryStore store = BinaryStore::kUnlessDriverCaches);
  static std::filesystem::path default_dir();

  // Returns a built program for `device` in `context`. Throws ProgramBuildError (with the build
  // log) when the source does not compile, ClError on other OpenCL failures.
  Program build(const Context& context, const DeviceInfo& device, std::string_view name,
                std::string_view source, std::string_view options = "");

  ProgramCacheStats stats() const;
  const std::filesystem::path& dir() const { return dir_; }
  // The file a program would be cached in (exposed for tests and `pax-ocl devices`).
  std::filesystem::path file_for(const DeviceInfo& device, std::string_view name, std::string_view source,
                                 std::string_view options) const;

 private:
  bool stores_binaries_for(const DeviceInfo& device) const;

  std::filesystem::path dir_;
  BinaryStore store_;
  mutable std::mutex mutex_;
  ProgramCacheStats stats_;
};

}  // namespace paxocl::device
