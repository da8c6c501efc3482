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
  // A resumed job's restart: a SessionLog START event at `first_new_step`, the first step this run
  // writes. TensorBoard then drops what earlier files of the directory hold at steps >=
  // first_new_step (it keeps steps below it), so the steps a killed run wrote after its last
  // checkpoint, and which this run writes again, show once.
  void session_start(std::int64_t first_new_step);
  const std::filesystem::path& file() const { return file_; }

 private:
  void write_record(const std::string& data);
  std::filesystem::path file_;
  std::ofstream out_;
};

}  // namespace paxocl::scheduler
