// SharedSnapshot: a recurrent-state checkpoint that forks share instead of copying (Session::Fork).
// Copy() hands out another reference to the same snapshot; from then on the snapshot is immutable
// (never recycled into a new checkpoint), so sessions on different threads may restore from it at
// once. A snapshot that was never shared stays the session's own and may be reused for the next
// checkpoint (CheckpointStore's spare). It is what CheckpointStore<SharedSnapshot> stores.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <utility>

#include "base/guard_alloc.h"
#include "base/status.h"
#include "model/recurrent_state.h"

namespace qwenrt {

class SharedSnapshot {
 public:
  // Error: OutOfMemory.
  static StatusOr<SharedSnapshot> Make(RecurrentState state) {
    return GuardAlloc(
        [&]() -> StatusOr<SharedSnapshot> {
          return SharedSnapshot(std::make_shared<Held>(std::move(state)));
        },
        "out of memory for a checkpoint");
  }

  const RecurrentState& state() const { return held_->state; }
  size_t bytes() const { return held_->state.bytes(); }
  // Another reference to the same snapshot (no bytes copied); marks it shared for good.
  StatusOr<SharedSnapshot> Copy() const {
    held_->shared.store(true, std::memory_order_relaxed);
    return SharedSnapshot(held_);
  }
  bool shared() const { return held_->shared.load(std::memory_order_relaxed); }
  // The snapshot's own state, to copy a new checkpoint into; nullptr once it has been shared.
  RecurrentState* reusable() { return shared() ? nullptr : &held_->state; }
  // Sessions holding it now (another thread may change that the next moment).
  long holders() const { return held_.use_count(); }
  // Its share of the memory when the bytes are divided among the sessions holding it.
  double prorated_bytes() const {
    return static_cast<double>(bytes()) / static_cast<double>(held_.use_count());
  }
  // Brings device-resident contents to the host (recurrent_state.h). A shared snapshot is never
  // pending (Fork fetches before it shares), so this only ever changes an unshared one.
  Status Fetch() { return held_->state.pending() == nullptr ? OkStatus() : held_->state.Fetch(); }

 private:
  struct Held {
    explicit Held(RecurrentState s) : state(std::move(s)) {}
    RecurrentState state;
    std::atomic<bool> shared{false};
  };
  explicit SharedSnapshot(std::shared_ptr<Held> held) : held_(std::move(held)) {}
  std::shared_ptr<Held> held_;
};

}  // namespace qwenrt
