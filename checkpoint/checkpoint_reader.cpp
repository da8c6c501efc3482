#include "checkpoint/checkpoint_reader.h"

#include <fstream>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "checkpoint/manifest_file.h"
#include "common/crc32c.h"
#include "common/errors.h"
#include "common/in_file.h"
#include "common/safetensors.h"
#include "config/model_settings.h"
#include "proto/checkpoint.pb.h"

namespace paxocl::checkpoint {

namespace fs = std::filesystem;

namespace {
void verify_file(const fs::path& file, std::uint64_t size, std::uint32_t crc) {
  const InFile in(file);
  if (in.size() != size) {
    throw DataError(fmt::format("{}: {} bytes, the manifest records {} (truncated or replaced)", file.string(), in.size(), size));
  }
  std::string chunk;
  std::uint32_t got = 0;
  for (std::uint64_t at = 0; at < size; at += chunk.size()) {
    chunk.resize(static_cast<std::size_t>(std::min<std::uint64_t>(size - at, 4u << 20)));
    in.read(at, chunk.data(), chunk.size());
    got = crc32c(chunk, got);
  }
  if (got != crc) throw DataError(fmt::format("{}: CRC32C {:08x}, the manifest records {:08x} (corrupt)", file.string(), got, crc));
}

// ConfigError unless the experiment the manifest records defines the same model as `requested`.
void check_same_model(const fs::path& directory, const proto::CheckpointManifest& manifest,
                      const config::Experiment& requested) {
  const std::string where = (directory / "manifest.pb").string();
  if (manifest.experiment_json().empty()) {
    throw ConfigError(fmt::format("{} records no experiment, so whether it was saved for this model cannot be checked; "
                                  "use another --job_log_dir", where));
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(manifest.experiment_json());
  } catch (const nlohmann::json::exception& e) {
    throw DataError(fmt::format("{}: its experiment record is not valid JSON ({})", where, e.what()));
  }
  const config::Experiment saved = config::Experiment::from_json(j, where);
  const std::vector<config::SettingDifference> differences = config::model_setting_differences(saved, requested);
  if (!differences.empty()) {
    throw ConfigError(fmt::format("{} was saved for another model: {}; use another --job_log_dir (or the saved settings)",
                                  directory.string(), config::describe_differences(differences)));
  }
}
}  // namespace

ManifestSummary read_manifest_summary(const CheckpointDir& dir, long step) {
  const proto::CheckpointManifest m = open_manifest(dir.final_path(step), step);
  return {static_cast<long>(m.step()), m.unix_time()};
}

void require_same_model(const CheckpointDir& dir, long step, const config::Experiment& requested) {
  const fs::path directory = dir.final_path(step);
  check_same_model(directory, open_manifest(directory, step), requested);
}

RestoredState read_checkpoint(const CheckpointDir& dir, long step, const models::ParameterLayout& layout,
                              const config::Experiment* requested) {
  const fs::path directory = dir.final_path(step);
  const proto::CheckpointManifest manifest = open_manifest(directory, step);
  for (const auto& f : manifest.files()) verify_file(directory / f.name(), f.size(), f.crc32c());
  if (requested) check_same_model(directory, manifest, *requested);

  std::map<std::string, const proto::CheckpointManifest::Tensor*> tensors;
  for (const auto& t : manifest.tensors()) tensors[t.name()] = &t;
  // A tensor the layout lacks (more layers, another family): restoring the rest would drop it.
  std::map<std::string, bool> expected;
  for (const char* kind : {"params", "adam_m", "adam_v"}) {
    for (const models::TensorSpec& t : layout.tensors()) expected[fmt::format("{}/{}", kind, t.name)] = true;
  }
  for (const auto& t : manifest.tensors()) {  // in the manifest's order: params/ first
    const std::string& name = t.name();
    if (!expected.contains(name)) {
      throw ConfigError(fmt::format("{} holds a tensor {} this experiment's model lacks: it was saved for another model; "
                                    "use another --job_log_dir",
                                    directory.string(), name));
    }
  }
  std::map<std::string, std::unique_ptr<SafetensorsReader>> readers;
  auto reader = [&](const std::string& file) -> SafetensorsReader& {
    auto& r = readers[file];
    if (!r) r = std::make_unique<SafetensorsReader>(directory / file);
    return *r;
  };

  RestoredState state;
  state.step = static_cast<long>(manifest.step());
  state.directory = directory.string();
  state.optimizer_steps_applied = static_cast<long>(manifest.optimizer_steps_applied());
  state.optimizer_steps_skipped = static_cast<long>(manifest.optimizer_steps_skipped());
  if (manifest.loss_scale() != 0) {
    state.loss_scale = models::LossScaleState{manifest.loss_scale(), static_cast<long>(manifest.loss_scale_clean_steps())};
  }
  state.input_state = manifest.input_state();
  state.sharding = manifest.sharding();
  std::vector<float>* images[] = {&state.params, &state.m, &state.v};
  const char* kinds[] = {"params", "adam_m", "adam_v"};
  for (int kind = 0; kind < 3; ++kind) {
    images[kind]->assign(layout.total(), 0.0f);
    for (const models::TensorSpec& t : layout.tensors()) {
      const std::string name = fmt::format("{}/{}", kinds[kind], t.name);
      const auto it = tensors.find(name);
      if (it == tensors.end()) {
        throw ConfigError(fmt::format("{} holds no tensor {}: it was saved for another model; use another --job_log_dir",
                                      directory.string(), name));
      }
      const std::vector<std::int64_t> shape(it->second->shape().begin(), it->second->shape().end());
      if (shape != t.shape) {
        throw ConfigError(fmt::format("{}: tensor {} has shape [{}] but this experiment's is [{}]; it was saved for "
                                      "another model; use another --job_log_dir",
                                      directory.string(), name, fmt::join(shape, ","), fmt::join(t.shape, ",")));
      }
      std::uint64_t covered = 0;
      for (const auto& piece : it->second->pieces()) {
        if (piece.begin() != covered || piece.end() < piece.begin() || piece.end() > t.count) {
          throw DataError(fmt::format("{}: piece {} of {} does not fit [{}, {})", directory.string(), piece.key(), name,
                                      piece.begin(), piece.end()));
        }
        const std::vector<float> data = reader(piece.file()).read_f32(piece.key());
        // The layout was built with checked sizes, so t.offset + t.count <= total(): the copy stays inside.
        if (data.size() != piece.end() - piece.begin()) {
          throw DataError(fmt::format("{}: piece {} of {} does not fit [{}, {})", directory.string(), piece.key(), name,
                                      piece.begin(), piece.end()));
        }
        std::copy(data.begin(), data.end(), images[kind]->begin() + static_cast<std::ptrdiff_t>(t.offset + piece.begin()));
        covered = piece.end();
      }
      if (covered != t.count) throw DataError(fmt::format("{}: the pieces of {} stop at {} of {}", directory.string(), name, covered, t.count));
    }
  }
  return state;
}

std::optional<RestoredState> read_latest_checkpoint(const CheckpointDir& dir, const models::ParameterLayout& layout,
                                                    const config::Experiment* requested,
                                                    const std::function<void(const std::string&)>& skipped) {
  const std::vector<long> steps = dir.steps();
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    try {
      return read_checkpoint(dir, *it, layout, requested);
    } catch (const DataError& e) {  // corrupt or truncated: the next older one
      skipped(e.what());
    }
  }
  return std::nullopt;
}

}  // namespace paxocl::checkpoint
