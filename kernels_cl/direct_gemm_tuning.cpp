#include "kernels_cl/direct_gemm_tuning.h"

#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/regular_file.h"
#include "device/device_fingerprint.h"
#include "device/program_cache.h"

namespace paxocl::kernels {

std::filesystem::path direct_gemm_tuning_file(const device::DeviceInfo& device) {
  return device::ProgramCache::default_dir() / "direct_gemm" / (device::device_file_stem(device) + ".json");
}

void save_direct_gemm_tuning(const std::filesystem::path& file, const device::DeviceInfo& device,
                             const DirectTile& tile, const std::string& note) {
  std::filesystem::create_directories(file.parent_path());
  const nlohmann::json j{{"device", device.name}, {"driver", device.driver_version}, {"kernel", "gemm_direct"},
                         {"tile", tile.name()}, {"note", note}};
  write_file_atomically(file, j.dump(2) + "\n");
}

DirectTile load_direct_gemm_tuning(const std::filesystem::path& file) {
  if (const std::string why = why_not_regular_file(file); !why.empty()) {  // a FIFO would block the open below
    throw ConfigError(fmt::format("direct GEMM tuning {} cannot be read ({}); run `pax-ocl tune` again or delete it", file.string(), why));
  }
  std::ifstream in(file);
  if (!in) throw ConfigError(fmt::format("direct GEMM tuning {} cannot be read", file.string()));
  try {
    return DirectTile::parse(nlohmann::json::parse(in).at("tile").get<std::string>());
  } catch (const std::exception& e) {  // json's parse, type and key errors, and parse()'s ConfigError
    throw ConfigError(fmt::format("direct GEMM tuning {} is invalid ({}); run `pax-ocl tune` again or delete it",
                                  file.string(), e.what()));
  }
}

std::optional<DirectTile> tuned_direct_tile(const device::DeviceInfo& device) {
  const std::filesystem::path file = direct_gemm_tuning_file(device);
  if (!std::filesystem::exists(file)) return std::nullopt;
  return load_direct_gemm_tuning(file);
}

}  // namespace paxocl::kernels
