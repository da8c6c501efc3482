// BaseInput: Pax's input contract. get_next() returns the next batch (batch as leading
// dimension), or nothing when an evaluation input has completed its pass; training inputs never
// end. reset() restarts an evaluation pass (Pax's reset_for_eval). state()/restore() capture and
// restore the position, so a restored input yields exactly the batches the original would have
// (under the same settings and data; inputs/input_state.h).
#pragma once

#include <optional>

#include "inputs/batch.h"
#include "inputs/input_state.h"

namespace paxocl::inputs {

class BaseInput {
 public:
  virtual ~BaseInput() = default;
  virtual std::optional<Batch> get_next() = 0;
  virtual void reset() = 0;
  virtual InputState state() const = 0;
  virtual void restore(const InputState& state) = 0;
};

}  // namespace paxocl::inputs
