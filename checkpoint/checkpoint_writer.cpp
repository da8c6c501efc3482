#include "checkpoint/checkpoint_writer.h"

#include <algorithm>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "checkpoint/manifest_file.h"
#include "common/atomic_file.h"
#include "common/bounded_json.h"
#include "common/errors.h"
#include "common/safetensors.h"
#include "proto/checkpoint.pb.h"

namespace paxocl::checkpoint {

namespace fs = std::filesystem;

namespace {
const char* const kKinds[] = {"params", "adam_m", "adam_v"};

std::string part_name(int process, const char* extension) { return fmt::format("part-{:05}.{}", process, extension); }

std::span<const float> values_of(const StateSlice& s, int kind) { return kind == 0 ? s.params : kind == 1 ? s.m : s.v; }

// A process's part list as write_process_part writes it; std::invalid_argument otherwise.
void check_part(const nlohmann::json& part) {
  const bool ok = part.is_object() && part.contains("file") && part["file"].is_string() &&
                  is_plain_file_name(part["file"].get<std::string>()) && part.contains("size") &&
                  part["size"].is_number_unsigned() && part.contains("crc32c") && part["crc32c"].is_number_unsigned() &&
                  part.contains("pieces") && part["pieces"].is_array();
  if (!ok) throw std::invalid_argument("expected {file, size, crc32c, pieces}");
  for (const auto& p : part["pieces"]) {
    if (!p.is_array() || p.size() != 4 || !p[0].is_string() || !p[1].is_string() || !p[2].is_number_unsigned() ||
        !p[3].is_number_unsigned()) {
      throw std::invalid_argument("expected pieces as [tensor, key, begin, end]");
    }
  }
}
}  // namespace

void write_process_part(const CheckpointDir& dir, const Snapshot& snapshot, const models::ParameterLayout& layout,
                        int process) {
  const fs::path tmp = dir.temporary_path(snapshot.step);
  struct Piece {
    std::string tensor, key;
    std::size_t begin, end;
    const float* data;
    TensorShape shape;
  };
  std::vector<Piece> pieces;
  for (int kind = 0; kind < 3; ++kind) {
    for (const models::TensorSpec& t : layout.tensors()) {
      for (const StateSlice& s : snapshot.slices) {
        const std::size_t b = std::max(t.offset, s.offset), e = std::min(t.offset + t.count, s.offset + s.params.size());
        if (b >= e) continue;
        const std::string tensor = fmt::format("{}/{}", kKinds[kind], t.name);
        const bool whole = b == t.offset && e == t.offset + t.count;
        pieces.push_back({tensor, whole ? tensor : fmt::format("{}@{}", tensor, b - t.offset), b - t.offset,
                          e - t.offset, values_of(s, kind).data() + (b - s.offset),
                          whole ? t.shape : TensorShape{static_cast<std::int64_t>(e - b)}});
      }
    }
  }
  std::vector<std::pair<std::string, TensorShape>> header;
  for (const Piece& p : pieces) header.emplace_back(p.key, p.shape);
  const std::string file = part_name(process, "safetensors");
  SafetensorsWriter out(tmp / file, header, {{"format", "pax-ocl checkpoint"}, {"step", std::to_string(snapshot.step)}});
  for (const Piece& p : pieces) out.add(std::span<const float>(p.data, p.end - p.begin));
  out.commit();

  nlohmann::json part = {{"file", file}, {"size", out.size()}, {"crc32c", out.crc32c()}, {"pieces", nlohmann::json::array()}};
  for (const Piece& p : pieces) part["pieces"].push_back({p.tensor, p.key, p.begin, p.end});
  const std::string text = part.dump();
  write_file_atomically(tmp / part_name(process, "json"), text);
}

void commit(const CheckpointDir& dir, const Snapshot& snapshot, const models::ParameterLayout& layout, int processes,
            std::chrono::seconds timeout) {
  const fs::path tmp = dir.temporary_path(snapshot.step);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<nlohmann::json> parts;
  for (int p = 0; p < processes; ++p) {
    const fs::path sidecar = tmp / part_name(p, "json");
    while (!fs::exists(sidecar)) {
      if (std::chrono::steady_clock::now() > deadline) {
        throw DataError(fmt::format("checkpoint {}: process {} did not write its part within {} s", tmp.string(), p,
                                    timeout.count()));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    try {
      nlohmann::json part = read_json_file_bounded(sidecar);
      check_part(part);
      parts.push_back(std::move(part));
    } catch (const std::exception& e) {  // std::invalid_argument or nlohmann's type errors
      throw DataError(fmt::format("checkpoint {}: the part list of process {} is unreadable ({})", tmp.string(), p, e.what()));
    }
  }

  proto::CheckpointManifest manifest;
  manifest.set_step(snapshot.step);
  manifest.set_unix_time(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  *manifest.mutable_mesh() = snapshot.mesh;
  manifest.set_sharding(snapshot.sharding);
  manifest.set_experiment_json(snapshot.experiment_json);
  manifest.set_input_state(snapshot.input_state);
  manifest.set_seed(snapshot.seed);
  manifest.set_optimizer_steps_applied(snapshot.optimizer_steps_applied);
  manifest.set_optimizer_steps_skipped(snapshot.optimizer_steps_skipped);
  if (snapshot.loss_scale) {
    manifest.set_loss_scale(snapshot.loss_scale->scale);
    manifest.set_loss_scale_clean_steps(snapshot.loss_scale->clean_steps);
  }
  std::map<std::string, std::vector<proto::CheckpointManifest::Piece>> pieces;
  for (const nlohmann::json& part : parts) {
    auto* f = manifest.add_files();
    f->set_name(part["file"].get<std::string>());
    f->set_size(part["size"].get<std::uint64_t>());
    f->set_crc32c(part["crc32c"].get<std::uint32_t>());
    for (const auto& p : part["pieces"]) {
      proto::CheckpointManifest::Piece piece;
      piece.set_file(f->name());
      piece.set_key(p[1].get<std::string>());
      piece.set_begin(p[2].get<std::uint64_t>());
      piece.set_end(p[3].get<std::uint64_t>());
      pieces[p[0].get<std::string>()].push_back(piece);
    }
  }
  for (const char* kind : kKinds) {
    for (const models::TensorSpec& t : layout.tensors()) {
      const std::string name = fmt::format("{}/{}", kind, t.name);
      auto& list = pieces[name];
      std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.begin() < b.begin(); });
      std::uint64_t covered = 0;
      for (const auto& p : list) {
        if (p.begin() != covered) break;
        covered = p.end();
      }
      if (covered != t.count) {
        throw DataError(fmt::format("checkpoint {}: the processes' pieces of {} cover [0, {}) of its {} elements",
                                    tmp.string(), name, covered, t.count));
      }
      auto* tensor = manifest.add_tensors();
      tensor->set_name(name);
      tensor->set_dtype("F32");
      for (std::int64_t d : t.shape) tensor->add_shape(d);
      for (const auto& p : list) *tensor->add_pieces() = p;
    }
  }
  write_file_atomically(tmp / CheckpointDir::kManifest, seal_manifest(std::move(manifest)));
  for (int p = 0; p < processes; ++p) fs::remove(tmp / part_name(p, "json"));
  sync_directory(tmp);
  dir.publish(snapshot.step);
}

}  // namespace paxocl::checkpoint
