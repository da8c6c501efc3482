// SummaryWriter: TensorBoard event files of scalar summaries, as TensorBoard reads them:
// `events.out.tfevents.<seconds>.<host>` in a directory, TFRecord framing (uint64 length, masked
// CRC32C of the length, the serialised Event, masked CRC32C of the data), a first Event carrying
// file_version "brain.Event:2", then one Event per scalar. Flushed after every write(), so a
// killed job keeps its summaries. A scalar of value 0 is written too (simple_value is in a oneof,
// as in TensorFlow).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace paxocl::scheduler {

class SummaryWriter {
 public:
  explicit SummaryWriter(const std::filesystem::path& dir);  // creates dir; DataError if it cannot
  void scalar(const std::string& tag, double value, std::int64_t step);
  const std::filesystem::path& file() const { return file_; }

 private:
  void write_record(const std::string& data);
  std::filesystem::path file_;
  std::ofstream out_;
};

}  // namespace paxocl::scheduler
