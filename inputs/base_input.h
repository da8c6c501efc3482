// BaseInput: Pax's input contract. get_next() returns the next batch (batch as leading
// dimension), or nothing when an evaluation input has completed its pass; training inputs never
// end. reset() restarts an evaluation pass (Pax's reset_for_eval). state()/restore() capture and
// restore the position, so a restored input yields exactly the batches the original would have.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "inputs/batch.h"

namespace paxocl::inputs {

struct InputState {
  std::uint64_t epoch = 0;
  std::uint64_t index = 0;  // batches emitted in this epoch
  std::string to_string() const;                           // "epoch=3,index=17"
  static InputState parse(const std::string& text);        // DataError when malformed
  bool operator==(const InputState&) const = default;
};

class BaseInput {
 public:
  virtual ~BaseInput() = default;
  virtual std::optional<Batch> get_next() = 0;
  virtual void reset() = 0;
  virtual InputState state() const = 0;
  virtual void restore(const InputState& state) = 0;
};

}  // namespace paxocl::inputs
