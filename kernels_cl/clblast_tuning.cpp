#include "kernels_cl/clblast_tuning.h"

#include <clblast.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/regular_file.h"
#include "device/device_fingerprint.h"
#include "device/program_cache.h"

namespace paxocl::kernels {

namespace {
void check(clblast::StatusCode status, const char* what) {
  if (status != clblast::StatusCode::kSuccess) {
    throw DeviceError(fmt::format("CLBlast {} failed with status {}", what, static_cast<int>(status)));
  }
}
}  // namespace

std::filesystem::path clblast_tuning_file(const device::DeviceInfo& d) {
  return device::ProgramCache::default_dir() / "clblast" / (device::device_file_stem(d) + ".json");
}

ClblastParameters current_clblast_gemm(const device::Device& device) {
  std::unordered_map<std::string, std::size_t> p;
  check(clblast::RetrieveParameters(device.info().id, "Xgemm", clblast::Precision::kSingle, p), "RetrieveParameters");
  return ClblastParameters(p.begin(), p.end());
}

std::vector<ClblastParameters> clblast_gemm_candidates(const ClblastParameters& base, std::size_t limit) {
  std::vector<ClblastParameters> all;
  for (std::size_t mwg : {16, 32, 64, 128}) {
    for (std::size_t nwg : {16, 32, 64, 128}) {
      for (std::size_t dim : {1, 2, 4, 8, 16}) {  // MDIMC = NDIMC = MDIMA = NDIMB: a dim x dim work-group
        for (std::size_t vw : {1, 2, 4, 8}) {  // VWM = VWN
          for (std::size_t kwg : {16, 32}) {
            for (std::size_t local : {0, 1}) {  // SA = SB: stage tiles in local memory
              // The kernel's constraints (CLBlast's xgemm tuner): tiles divide by threads x vectors,
              // and K tiles by the re-shaped thread blocks.
              if (mwg % (dim * vw) != 0 || nwg % (dim * vw) != 0 || kwg % ((dim * dim) / dim) != 0) continue;
              ClblastParameters p = base;
              p["MWG"] = mwg; p["NWG"] = nwg; p["KWG"] = kwg; p["KWI"] = 2;
              p["MDIMC"] = dim; p["NDIMC"] = dim; p["MDIMA"] = dim; p["NDIMB"] = dim;
              p["VWM"] = vw; p["VWN"] = vw; p["SA"] = local; p["SB"] = local;
              p["STRM"] = 0; p["STRN"] = 0; p["GEMMK"] = 0; p["KREG"] = 1;
              all.push_back(std::move(p));
            }
          }
        }
      }
    }
  }
  // A fixed-seed sample: the same candidates on every run, spread over the whole grid.
  std::shuffle(all.begin(), all.end(), std::mt19937(20261121));
  std::vector<ClblastParameters> chosen = {base};
  for (std::size_t i = 0; i < all.size() && chosen.size() < limit; ++i) chosen.push_back(all[i]);
  return chosen;
}

void override_clblast_gemm(const device::Device& device, const ClblastParameters& parameters) {
  const std::unordered_map<std::string, std::size_t> p(parameters.begin(), parameters.end());
  check(clblast::OverrideParameters(device.info().id, "Xgemm", clblast::Precision::kSingle, p), "OverrideParameters");
}

void save_clblast_tuning(const device::DeviceInfo& device, const ClblastParameters& parameters, const std::string& note) {
  const std::filesystem::path file = clblast_tuning_file(device);
  std::filesystem::create_directories(file.parent_path());
  const nlohmann::json j{{"device", device.name}, {"driver", device.driver_version}, {"kernel", "Xgemm"},
                         {"precision", "single"}, {"parameters", parameters}, {"note", note}};
  write_file_atomically(file, j.dump(2) + "\n");
}

bool apply_clblast_tuning(const device::Device& device) {
  const std::filesystem::path file = clblast_tuning_file(device.info());
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return false;
  if (const std::string why = why_not_regular_file(file); !why.empty()) {  // a FIFO would block the open below
    spdlog::warn("ignoring CLBlast tuning {}: {} (remove it, then run `pax-ocl tune` again)", file.string(), why);
    return false;
  }
  std::ifstream in(file);
  if (!in) return false;
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    override_clblast_gemm(device, j.at("parameters").get<ClblastParameters>());
    return true;
  } catch (const std::exception& e) {  // a stale or foreign file must not stop training
    spdlog::warn("ignoring CLBlast tuning {}: {} (run `pax-ocl tune` again)", file.string(), e.what());
    return false;
  }
}

}  // namespace paxocl::kernels
