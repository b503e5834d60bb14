// Checkpoints of the recurrent state: where a Session snapshots its GDN state during a prefill
// (`PlanPrefill`) and the store that keeps those snapshots under a byte budget (`CheckpointStore`).
// The snapshot type is a template parameter so the policy can be tested without a model; the
// Session instantiates it with `RecurrentState`. See docs/checkpoints.md for the placement rules.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "base/status.h"

namespace qwenrt {

// What the store reports about one checkpoint.
struct CheckpointInfo {
  int64_t pos = 0;    // number of transcript tokens the snapshot has absorbed (state "at" pos)
  uint64_t turn = 0;  // the Session turn (Feed call) that created it
  size_t bytes = 0;   // memory held by the snapshot
};

// Which checkpoints a prefill of positions [start, end) takes (all positions are absolute token
// positions; a checkpoint "at p" is the state after tokens 0..p-1):
//  - every caller-requested position p with start < p <= end,
//  - automatically `end` and `end - tail` (when tail > 0 and end - tail > start): a re-rendered
//    generation prompt usually diverges in its last few tokens, so the next turn finds a snapshot
//    at or just before the divergence,
//  - every multiple of `every` in (start, end] when every > 0.
// Returns the positions sorted and unique.
std::vector<int64_t> PlanCheckpointPositions(int64_t start, int64_t end,
                                             std::span<const int64_t> requested, int64_t tail,
                                             int64_t every);

// One forward call of a prefill: tokens [begin, end); snapshot the state afterwards if checkpoint.
struct PrefillBatch {
  int64_t begin = 0;
  int64_t end = 0;
  bool checkpoint = false;
};

// Splits the prefill of [start, end) into forward calls of at most `ubatch` tokens whose edges sit
// on absolute multiples of `ubatch` (so a resumed prefill and a full one cut the same places) and,
// exactly, on every checkpoint position (a snapshot must hold precisely the tokens before it).
// `checkpoints` must be sorted; positions outside (start, end] are ignored. ubatch >= 1.
std::vector<PrefillBatch> PlanPrefill(int64_t start, int64_t end, int64_t ubatch,
                                      std::span<const int64_t> checkpoints);

// Snapshots keyed by position, with least-recently-used eviction under a byte budget.
// Eviction order: first the least recently used snapshot that is not the newest of its turn; when
// only such "newest of a turn" snapshots are left, the least recently used of those, except that
// the newest snapshot of the latest turn is never evicted (the budget may then be exceeded by it).
// `Snapshot` needs `size_t bytes() const` and `StatusOr<Snapshot> Copy() const`.
// Not thread-safe: it belongs to one Session.
template <typename Snapshot>
class CheckpointStore {
 public:
  struct Entry {
    int64_t pos = 0;
    uint64_t turn = 0;
    uint64_t last_used = 0;  // tick of the last Put/Find that touched it
    Snapshot snapshot;
  };

  explicit CheckpointStore(size_t budget_bytes) : budget_(budget_bytes) {}
  CheckpointStore(CheckpointStore&&) noexcept = default;
  CheckpointStore& operator=(CheckpointStore&&) noexcept = default;

  // A copy made with Snapshot::Copy (the Session's SharedSnapshot shares instead of copying); used
  // by Session::Fork. Errors: those of Snapshot::Copy.
  StatusOr<CheckpointStore> Copy() const {
    CheckpointStore c(budget_);
    c.tick_ = tick_;
    c.evictions_ = evictions_;
    c.entries_.reserve(entries_.size());
    for (const Entry& e : entries_) {
      auto snap = e.snapshot.Copy();
      if (!snap.ok()) return snap.status();
      c.entries_.push_back(Entry{e.pos, e.turn, e.last_used, std::move(snap).value()});
    }
    c.bytes_ = bytes_;
    return c;
  }

  // Inserts the snapshot at `pos` (replacing one already there), then evicts down to the budget.
  void Put(int64_t pos, uint64_t turn, Snapshot snapshot) {
    auto it = std::lower_bound(entries_.begin(), entries_.end(), pos,
                               [](const Entry& e, int64_t p) { return e.pos < p; });
    if (it != entries_.end() && it->pos == pos) {
      bytes_ -= it->snapshot.bytes();
      it->turn = turn;
      it->last_used = ++tick_;
      Recycle(std::move(it->snapshot));
      it->snapshot = std::move(snapshot);
      bytes_ += it->snapshot.bytes();
    } else {
      size_t b = snapshot.bytes();
      entries_.insert(it, Entry{pos, turn, ++tick_, std::move(snapshot)});
      bytes_ += b;
    }
    Evict();
  }

  // The newest snapshot at a position <= limit (marked as used), or nullptr.
  const Entry* FindAtOrBefore(int64_t limit) {
    auto it = std::upper_bound(entries_.begin(), entries_.end(), limit,
                               [](int64_t p, const Entry& e) { return p < e.pos; });
    if (it == entries_.begin()) return nullptr;
    --it;
    it->last_used = ++tick_;
    return &*it;
  }

  // Removes every snapshot at a position > pos (they describe a transcript that no longer exists).
  void DropAfter(int64_t pos) {
    while (!entries_.empty() && entries_.back().pos > pos) {
      bytes_ -= entries_.back().snapshot.bytes();
      Recycle(std::move(entries_.back().snapshot));
      entries_.pop_back();
    }
  }

  void Clear() {
    entries_.clear();
    bytes_ = 0;
    spare_.clear();
  }

  // A snapshot the store no longer holds (evicted, dropped or replaced), kept so the next
  // checkpoint can be copied into it instead of allocating a new state (states can be 100+ MiB). At
  // most one is kept; its memory is spare_bytes(), not part of bytes() or the budget.
  std::optional<Snapshot> TakeSpare() {
    if (spare_.empty()) return std::nullopt;
    std::optional<Snapshot> out(std::move(spare_.back()));
    spare_.pop_back();
    return out;
  }
  size_t spare_bytes() const { return spare_.empty() ? 0 : spare_.back().bytes(); }

  void set_budget(size_t budget_bytes) {
    budget_ = budget_bytes;
    Evict();
  }
  size_t budget() const { return budget_; }
  size_t bytes() const { return bytes_; }
  size_t size() const { return entries_.size(); }
  uint64_t evictions() const { return evictions_; }
  const std::vector<Entry>& entries() const { return entries_; }  // sorted by pos
  // f(Snapshot&) -> Status on every snapshot in pos order (e.g. to fetch device-resident ones
  // before a save); stops at the first error.
  template <typename F>
  Status ForEachSnapshot(F&& f) {
    for (Entry& e : entries_) QWENRT_RETURN_IF_ERROR(f(e.snapshot));
    return OkStatus();
  }

  std::vector<CheckpointInfo> List() const {
    std::vector<CheckpointInfo> out;
    out.reserve(entries_.size());
    for (const Entry& e : entries_) out.push_back({e.pos, e.turn, e.snapshot.bytes()});
    return out;
  }

 private:
  // True when no other entry of the same turn has a larger position.
  bool IsNewestOfTurn(size_t i) const {
    for (size_t j = i + 1; j < entries_.size(); ++j)
      if (entries_[j].turn == entries_[i].turn) return false;
    return true;
  }

  void Evict() {
    while (bytes_ > budget_ && !entries_.empty()) {
      uint64_t latest_turn = 0;
      for (const Entry& e : entries_) latest_turn = std::max(latest_turn, e.turn);
      // Pass 0: unprotected only; pass 1: any but the newest of the latest turn.
      size_t victim = entries_.size();
      for (int pass = 0; pass < 2 && victim == entries_.size(); ++pass) {
        for (size_t i = 0; i < entries_.size(); ++i) {
          bool newest = IsNewestOfTurn(i);
          if (pass == 0 && newest) continue;
          if (pass == 1 && newest && entries_[i].turn == latest_turn) continue;
          if (victim == entries_.size() || entries_[i].last_used < entries_[victim].last_used)
            victim = i;
        }
      }
      if (victim == entries_.size()) return;  // only the protected newest snapshot is left
      bytes_ -= entries_[victim].snapshot.bytes();
      Recycle(std::move(entries_[victim].snapshot));
      entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(victim));
      ++evictions_;
    }
  }

  void Recycle(Snapshot&& s) {
    if (spare_.empty()) spare_.push_back(std::move(s));
  }

  size_t budget_;
  size_t bytes_ = 0;
  std::vector<Snapshot> spare_;  // at most one
  uint64_t tick_ = 0;
  uint64_t evictions_ = 0;
  std::vector<Entry> entries_;  // sorted by pos, unique
};

}  // namespace qwenrt
