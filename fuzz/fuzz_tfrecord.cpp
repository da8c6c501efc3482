// Fuzzes the TensorBoard event writer (scheduler/summary_writer.h) in a round trip: scalars taken
// from the input are written with SummaryWriter, the file is read back with an independent TFRecord
// reader (fuzz/tfrecord_reader.h) and parsed as Events; the records must frame and checksum
// correctly, start with the "brain.Event:2" version event, and hold every scalar as written.
// Tags are the input's bytes with anything outside printable ASCII replaced: pax-ocl's tags are
// fixed ASCII names, and proto3 string fields must be UTF-8 anyway.
#include <fuzzer/FuzzedDataProvider.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "fuzz/tfrecord_reader.h"
#include "proto/tensorboard.pb.h"
#include "scheduler/summary_writer.h"

using namespace paxocl;

namespace {
struct Scalar {
  std::string tag;
  double value;
  std::int64_t step;
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  std::vector<Scalar> scalars;
  while (in.remaining_bytes() > 0 && scalars.size() < 64) {
    Scalar s{in.ConsumeRandomLengthString(64), in.ConsumeFloatingPoint<double>(), in.ConsumeIntegral<std::int64_t>()};
    for (char& c : s.tag) {
      if (c < 0x20 || c > 0x7e) c = '_';
    }
    scalars.push_back(std::move(s));
  }

  const auto dir = fuzz::scratch_dir() / "events";
  std::filesystem::remove_all(dir);  // the writer appends to a file of the same second
  std::filesystem::path file;
  {
    scheduler::SummaryWriter writer(dir);  // any error here is a finding: the directory is writable
    for (const Scalar& s : scalars) writer.scalar(s.tag, s.value, s.step);
    file = writer.file();
  }

  std::string error;
  const std::vector<std::string> records = fuzz::read_tfrecords(fuzz::read_file(file), error);
  fuzz::require(error.empty(), error);
  fuzz::require(records.size() == scalars.size() + 1, "the event file holds another number of records than written");
  proto::tensorboard::Event event;
  fuzz::require(event.ParseFromString(records[0]) && event.file_version() == "brain.Event:2",
                "the first record is not the file_version event");
  for (std::size_t i = 0; i < scalars.size(); ++i) {
    fuzz::require(event.ParseFromString(records[i + 1]), "a record is not an Event");
    fuzz::require(event.step() == scalars[i].step, "an event's step differs from the one written");
    fuzz::require(std::isfinite(event.wall_time()) && event.wall_time() > 0, "an event's wall_time is not a time");
    fuzz::require(event.has_summary() && event.summary().value_size() == 1, "an event does not hold one scalar");
    const auto& value = event.summary().value(0);
    fuzz::require(value.tag() == scalars[i].tag, "an event's tag differs from the one written");
    const float expected = static_cast<float>(scalars[i].value);
    fuzz::require(std::bit_cast<std::uint32_t>(value.simple_value()) == std::bit_cast<std::uint32_t>(expected),
                  "an event's value differs from the one written");
  }
  return 0;
}
