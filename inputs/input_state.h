// InputState: an input's position, as a checkpoint stores it (a string in the manifest).
//   "epoch=3,index=17,seq_len=128,global_batch=16,tokens=1048576"
// epoch and index count batches; the geometry after them (MAX_SEQ_LEN, the global batch, i.e.
// per-host batch x infeed hosts, and the tokens of the stream) says what a batch meant when the
// state was saved, so a resume under other settings or other data can tell (see
// WindowedInput::restore). States saved before the geometry was recorded ("epoch=3,index=17")
// still parse, with no geometry.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace paxocl::inputs {

struct WindowGeometry {
  std::uint64_t seq_len = 0;       // tokens per window (MAX_SEQ_LEN)
  std::uint64_t global_batch = 0;  // windows per step over all infeed hosts
  std::uint64_t tokens = 0;        // tokens in the stream (identifies the data)
  bool operator==(const WindowGeometry&) const = default;
};

struct InputState {
  std::uint64_t epoch = 0;
  std::uint64_t index = 0;                  // batches emitted in this epoch (or evaluation pass)
  std::optional<WindowGeometry> geometry;   // absent: unknown (an old state, or not a windowed input)

  std::string to_string() const;
  // DataError when malformed: unknown, repeated or missing keys, values that are not unsigned
  // decimal numbers (e.g. "index=-1"), or a geometry with a zero or partial field set.
  static InputState parse(const std::string& text);
  bool operator==(const InputState&) const = default;
};

}  // namespace paxocl::inputs
