// The direct GEMM's tile tuned for one device (`pax-ocl tune`), kept beside the CLBlast tuning in
// <cache dir>/direct_gemm/<device>-<fingerprint>.json (device/device_fingerprint.h) and used by
// every DirectGemm built on that device without an explicit tile (direct_gemm.h).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "device/device_info.h"
#include "kernels_cl/direct_gemm.h"

namespace paxocl::kernels {

std::filesystem::path direct_gemm_tuning_file(const device::DeviceInfo& device);

// Writes `file` atomically (DataError when it cannot): the tile, the device it was tuned on, a note.
void save_direct_gemm_tuning(const std::filesystem::path& file, const device::DeviceInfo& device,
                             const DirectTile& tile, const std::string& note);
// The tile stored in `file`; ConfigError naming the file for one that cannot be read, is not
// JSON, lacks the tile or holds an invalid one.
DirectTile load_direct_gemm_tuning(const std::filesystem::path& file);
// The device's tuned tile, if `pax-ocl tune` stored one (load_direct_gemm_tuning's errors otherwise).
std::optional<DirectTile> tuned_direct_tile(const device::DeviceInfo& device);

}  // namespace paxocl::kernels
