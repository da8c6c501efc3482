// PipelineStep: pipeline parallelism over the mesh's stage axis (praxis's
// LayerwiseShardablePipelined), data parallel along the data axis, FSDP along the fsdp axis and
// tensor parallel along the tensor axis inside each stage.
//
// Each device holds one stage (models/pipeline_schedule.h: L/p contiguous blocks; the embedding on
// the first stage, the final norm, head and loss on the last) of one pipeline, or under the
// circular schedule CIRCULAR_REPEAT chunks of L/(p*r) blocks (virtual stages, round robin); a
// pipeline's devices share its sequences (replica_batch), which run as NUM_MICROBATCHES
// microbatches. Every device runs its passes on a thread of its own, in the order of
// PIPELINE_SCHEDULE (stage_ops): a forward receives its input from the previous stage and sends its output to the
// next, a backward receives its output's gradient from the next stage and sends its input's to
// the previous (collectives::StageMessages: a mailbox inside the process, MPI between processes;
// the stage's queue runs meanwhile; between devices of this process in one OpenCL context
// (ICI_ALGORITHM=ring) the bytes move device to device, only the copy's event through the mailbox;
// with a tensor axis each tensor rank sends its own copy, or
// under SEQUENCE_PARALLEL its rows, to the same rank of the next stage; on a traced step the copies out of and into the device are on
// the trace's communication track and in its overlap report). A stage keeps one model instance per microbatch it holds at
// once (microbatches_in_flight: m for gpipe, p - s for 1f1b), each with its own activations over
// the stage's one set of parameters and gradients, which the backwards accumulate.
// After the last backward: GPT's tied token table is held by the first and the last stage, whose
// gradients are exchanged and summed (both apply the same update); each stage's gradients are
// averaged over the data axis (collectives::GradientAverager); the global norm sums each element's
// square once over the job (data coordinate 0; the tied table on the first stage); then Adam.
// FSDP inside a stage: the fsdp axis splits the rows as the data axis does and shards each chunk's
// optimizer (ZeRO-2, as Megatron's distributed optimizer and DeepSpeed pipeline with ZeRO): a
// device keeps Adam's moments for its shard only (models::ShardPlan::buffer_shard of the chunk's
// flat buffer); the gradients are reduce-scattered into the shards (collectives::FsdpCommunicator:
// the mean over data x fsdp), Adam updates each shard in place and the shards are all-gathered
// back. Parameters and gradients stay whole through the step: every microbatch runs every block
// of the stage, interleaved under 1F1B, so gathering a block per use (ZeRO-3) would repeat each
// all-gather 2m times a step.
// Parameter images and checkpoints are whole-model images assembled from the stages (summed over
// the job, each element placed by the one device owning it), so any layout restores them.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "collectives/fsdp_communicator.h"
#include "collectives/gradient_averager.h"
#include "collectives/mpi_communicator.h"
#include "collectives/stage_messages.h"
#include "models/shard_plan.h"
#include "models/stage_split.h"
#include "scheduler/step_program.h"
#include "scheduler/tensor_groups.h"

namespace paxocl::scheduler {

class PipelineStep : public StepProgram {
 public:
  PipelineStep(const std::vector<device::DeviceInfo>& devices, device::ProgramCache& cache,
               const collectives::ProcessWorld& world, const StepOptions& options);

  void load_parameters(std::span<const float> flat) override;
  std::vector<StateSlice> state_slices() override;  // process 0: the assembled whole; the others: nothing
  OptimizerCounts optimizer_counts() const override;
  void load_state(std::span<const float> params, std::span<const float> m, std::span<const float> v,
                  OptimizerCounts counts) override;
  std::vector<float> parameters() override;
  models::LossStats run_step(const inputs::Batch& batch, double lr, double loss_scale,
                             models::OptimizerStepStats& opt) override;
  // The batch through this process's first pipeline, in microbatches of the model's size;
  // collective when the stages span processes (they read the same rows).
  models::LossStats evaluate(const inputs::Batch& batch) override;
  bool evaluation_is_collective() const override;
  // The first pipeline's last stage (ConfigError when another process holds it).
  const models::Model& evaluation_model() const override;
  bool communicates() const override { return true; }
  long steps_skipped() const override { return locals_.front().adam->steps_skipped(); }
  std::size_t state_bytes_per_device() const override;  // the device holding most: 2 x chunk + 2 x shard floats
  std::size_t activation_bytes_per_device() const override;
  // The microbatches each chunk of the device activation_bytes_per_device() reports holds (the most
  // over its chunks), as plan::DeviceMemory::microbatches_in_flight.
  int microbatches_held() const override;
  void set_tracing(bool on) override;
  std::vector<TraceEvent> take_trace(const std::vector<std::int64_t>& offsets, long step) override;
  const models::ParameterLayout& layout() const override { return *whole_layout_; }

 private:
  struct Peer {  // a chunk on a device of the job: its process, local index and chunk (process -1: none)
    int process = -1, local = -1, chunk = 0;
    bool exists() const { return process >= 0; }
  };
  // What a message carries; with the receiving device's local index, its channel.
  enum class Carries { kActivation = 0, kGradient = 1, kTiedGradient = 2 };
  // One chunk of blocks on one local device: its stage (a virtual stage under the circular schedule).
  struct Stage {
    std::size_t device = 0;      // local index
    int chunk = 0;               // of the device's CIRCULAR_REPEAT
    models::StageSpan span;      // its blocks (stages: p x CIRCULAR_REPEAT)
    int replica = 0;             // this process's pipeline the device belongs to ([data, fsdp]): its rows
    bool first_replica = false;  // data coordinate 0: its shard's elements count once in norms and images
    Peer previous, next;         // the neighbouring stages of its pipeline
    Peer other_end;              // first <-> last stage, which both hold a tied tensor
    // Its model instances (one per microbatch held) and optimizer: chunk 0's first instance and
    // optimizer are the device's Local ones; the others are owned here.
    models::Model* first = nullptr;
    models::AdamOptimizer* adam = nullptr;
    std::unique_ptr<models::Model> own_first;
    std::unique_ptr<models::AdamOptimizer> own_adam;
    std::vector<std::unique_ptr<models::Model>> more_slots;
    std::unique_ptr<models::StagePart> part;  // its tensors in the whole layout
    models::ShardPlan::Piece shard;           // what its optimizer updates: the whole chunk without fsdp
    collectives::UnitSplit split;             // fsdp: the chunk's flat buffer over the fsdp axis
    std::vector<models::AdamOptimizer::Segment> counted;  // its ranges in the global norm
    std::vector<collectives::StageMessages::Message> held;  // messages the queue still writes from
    std::size_t staging_bytes = 0;  // its direct channels' staging buffers (it receives on them)
    // While tracing: the copies of messages out of and into the device (device clock).
    std::vector<std::pair<std::string, device::Event>> transfers;
  };

  Stage& stage(std::size_t device, int chunk) { return stages_[device * static_cast<std::size_t>(repeat_) + static_cast<std::size_t>(chunk)]; }
  models::Model& slot(Stage& st, int microbatch);
  int channel(int local, int chunk, Carries what) const { return (local * repeat_ + chunk) * kCarries + static_cast<int>(what); }
  // Device d's passes over `micro` in its schedule's order (forward only: every chunk's forwards
  // in order); returns the losses it computed (the last stage's).
  models::LossStats run_device(std::size_t d, const std::vector<inputs::Batch>& micro, double mean_over, bool training);
  void send(Stage& st, const Peer& to, Carries what, const models::ActBuffer& x, const inputs::Batch& rows, int microbatch);
  void receive(Stage& st, const Peer& from, Carries what, models::ActBuffer& into, const inputs::Batch& rows,
               int microbatch);
  void trace_transfer(Stage& st, const char* direction, Carries what, int microbatch, device::Event event);
  std::size_t message_bytes(const inputs::Batch& rows, device::DType dtype) const;  // an activation's or its gradient's
  models::LossStats losses_of(const std::vector<models::LossStats>& per_device) const;
  void sum_tied_gradients();
  device::Event queue_marker(std::size_t device);  // now on the device's queue, flushed
  // fsdp: `issue`'s collective for every shard group's chunk, given the members' stages in order.
  using ShardCollective =
      std::function<collectives::Pending(collectives::FsdpCommunicator&, const std::vector<Stage*>&)>;
  std::vector<collectives::Pending> over_shard_groups(const ShardCollective& issue);
  // Each member's `buffer` and a marker of its device's queue now (what a collective waits for).
  std::pair<collectives::IciCommunicator::Buffers, std::vector<device::Event>> buffers_now(
      const std::vector<Stage*>& members, const std::function<models::FloatBuffer(Stage&)>& buffer);
  void reduce_gradients();  // the mean over data (x fsdp: into each device's shard)
  void gather_parameters();  // fsdp: every device's updated shard to the others
  // Each data-replica-0 stage's shard of `buffer(st)` (zeros elsewhere) placed in the whole layout
  // and summed over the job: a whole-model image. The buffer holds the chunk (parameters) or only
  // the shard (Adam's moments).
  enum class Holds { kChunk, kShard };
  std::vector<float> assemble(Holds holds, const std::function<const models::FloatBuffer&(Stage&)>& buffer);
  std::size_t per_device_most(const std::function<std::size_t(const Stage&)>& bytes) const;
  std::size_t most_activations_device() const;  // local index; the first of equals
  std::size_t activation_bytes(const Stage& st) const;
  // The batch's stages on threads, one per device in `devices` (a failure releases the others).
  void run_stages(const std::vector<std::size_t>& devices, const std::function<void(std::size_t)>& work);

  StepOptions options_;
  const collectives::ProcessWorld& world_;
  static constexpr int kCarries = 3;  // kinds of message (Carries)
  std::size_t dims_ = 0;  // C: the width of the activations between stages
  int repeat_ = 1;        // chunks per device (CIRCULAR_REPEAT)
  bool sequence_parallel_ = false;  // messages carry a tensor rank's rows of the stream
  std::unique_ptr<models::ParameterLayout> whole_layout_;
  std::vector<Stage> stages_;  // per local device, its chunks in order (stage(d, c))
  std::unique_ptr<collectives::StageMessages> messages_;
  // A channel between two devices of this process in one context: a staging buffer per microbatch.
  // The sender's queue copies its output into buffer j and the copy's event is stored before an
  // empty mailbox message says so; the receiver's queue waits for the event and copies buffer j
  // into its input. Each buffer takes one message a step, written and read before the step's
  // queues finish, so none is overwritten while it is read (and no host memory is involved).
  struct DirectChannel {
    std::vector<device::Buffer<std::byte>> staging;  // per microbatch
    std::vector<device::Event> filled;               // per microbatch: the sender's copy
  };
  std::map<int, DirectChannel> direct_;  // by channel; fixed after construction
  DirectChannel* direct_channel(int channel, int microbatch);  // null: through host memory
  std::vector<std::unique_ptr<collectives::GradientAverager>> averagers_;  // one per chunk's data group
  std::vector<int> averager_of_;                                             // per stages_ entry, -1: none
  struct ShardGroup {  // fsdp: one (stage, tensor) index's devices of this process, [data, fsdp] order
    std::vector<std::size_t> members;  // local indices
    std::unique_ptr<collectives::FsdpCommunicator> comm;
  };
  std::vector<ShardGroup> shard_groups_;
  std::unique_ptr<collectives::MpiCommunicator> job_;  // every process: whole images
  std::unique_ptr<TensorGroups> tensors_;              // a tensor axis inside the stages
  bool tracing_ = false;
};

}  // namespace paxocl::scheduler
