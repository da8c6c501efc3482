#include "scheduler/summary_writer.h"

#include <unistd.h>

#include <chrono>

#include <fmt/format.h>

#include "common/crc32c.h"
#include "common/errors.h"
#include "proto/tensorboard.pb.h"

namespace paxocl::scheduler {

namespace {
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

SummaryWriter::SummaryWriter(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  file_ = dir / fmt::format("events.out.tfevents.{}.{}", static_cast<long>(now_seconds()), host);
  out_.open(file_, std::ios::binary | std::ios::app);
  if (!out_) throw DataError(fmt::format("cannot write summaries to {}", file_.string()));
  proto::tensorboard::Event header;
  header.set_wall_time(now_seconds());
  header.set_file_version("brain.Event:2");
  write_record(header.SerializeAsString());
}

void SummaryWriter::scalar(const std::string& tag, double value, std::int64_t step) {
  proto::tensorboard::Event event;
  event.set_wall_time(now_seconds());
  event.set_step(step);
  auto* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  write_record(event.SerializeAsString());
}

void SummaryWriter::session_start(std::int64_t first_new_step) {
  proto::tensorboard::Event event;
  event.set_wall_time(now_seconds());
  event.set_step(first_new_step);
  event.mutable_session_log()->set_status(proto::tensorboard::SessionLog::START);
  write_record(event.SerializeAsString());
}

void SummaryWriter::write_record(const std::string& data) {
  const std::uint64_t length = data.size();
  const std::string length_bytes(reinterpret_cast<const char*>(&length), sizeof length);  // little-endian hosts
  const std::uint32_t length_crc = masked_crc32c(length_bytes), data_crc = masked_crc32c(data);
  out_.write(length_bytes.data(), static_cast<std::streamsize>(length_bytes.size()));
  out_.write(reinterpret_cast<const char*>(&length_crc), sizeof length_crc);
  out_.write(data.data(), static_cast<std::streamsize>(data.size()));
  out_.write(reinterpret_cast<const char*>(&data_crc), sizeof data_crc);
  out_.flush();
  if (!out_) throw DataError(fmt::format("writing summaries to {} failed (disk full?)", file_.string()));
}

}  // namespace paxocl::scheduler
