// WindowedInput: batches of fixed-length windows cut from a TokenStream (concat-then-split
// packing: documents were joined with EOS when the stream was written). Window w holds tokens
// [w*T, w*T + T] (ids = the first T, targets = the next T), so W = (size - 1) / T windows.
//   training: each epoch visits the windows in a fresh seeded permutation; step k of host h takes
//     global slots [k*G + h*P, k*G + h*P + P) (G = P * hosts), so hosts never emit the same
//     window in a step and an epoch covers every window once; the last W mod G windows wait for
//     the next epoch's permutation.
//   evaluation: windows in order; ceil(W / G) batches per pass on every host, the slots past W
//     padded with weight 0, so all hosts run the same number of batches.
// state() records the geometry (MAX_SEQ_LEN, global batch, stream tokens) with the position.
// restore() of a training state:
//   same geometry (or none recorded): restored exactly; an index past the epoch is a DataError.
//   other geometry (another MAX_SEQ_LEN, PERCORE_BATCH_SIZE or mesh, or other data): the position
//     is mapped by tokens consumed: the same number of tokens into the epoch, at whole batches of
//     this run, wrapped into later epochs when this run's epoch is shorter; logged as a warning.
//     The saved index must lie inside the saved geometry's epoch (else DataError: corrupt state).
// restore() of an evaluation state (never checkpointed): index <= the pass's batches and the
// same geometry, else DataError.
#pragma once

#include "inputs/base_input.h"
#include "inputs/input_params.h"
#include "inputs/token_stream.h"

namespace paxocl::inputs {

class WindowedInput : public BaseInput {
 public:
  WindowedInput(TokenStream stream, InputParams params);

  std::optional<Batch> get_next() override;
  void reset() override { state_ = {}; }
  InputState state() const override;
  void restore(const InputState& state) override;

  std::size_t num_windows() const { return windows_; }
  std::size_t batches_per_epoch() const { return batches_per_epoch_; }

 private:
  void build_order(std::uint64_t epoch);
  WindowGeometry geometry() const;
  std::uint64_t pass_batches() const;  // evaluation: batches in one pass


  TokenStream stream_;
  InputParams params_;
  std::size_t windows_ = 0, global_batch_ = 0, batches_per_epoch_ = 0;
  InputState state_;
  std::vector<std::size_t> order_;  // this epoch's window order (training)
  std::uint64_t order_epoch_ = ~0ull;
};

}  // namespace paxocl::inputs
