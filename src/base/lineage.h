// Lineage: a process-wide unique id naming "these contents" of a state buffer (KvCache,
// RecurrentState). It is renewed whenever the contents may change by any route other than the
// forward pass that last wrote them, and travels with the contents on a move (the moved-from object
// gets a fresh id). A device backend keeps a mirror of the state and knows it is still current when
// the lineage it recorded after its last run equals the buffer's lineage now (cuda_state.h).
#pragma once

#include <atomic>
#include <cstdint>

namespace qwenrt {

class Lineage {
 public:
  Lineage() : id_(Next()) {}
  Lineage(const Lineage&) = delete;
  Lineage& operator=(const Lineage&) = delete;
  Lineage(Lineage&& other) noexcept : id_(other.id_) { other.Renew(); }
  Lineage& operator=(Lineage&& other) noexcept {
    id_ = other.id_;
    other.Renew();
    return *this;
  }

  uint64_t id() const { return id_; }
  void Renew() { id_ = Next(); }

 private:
  static uint64_t Next() {
    static std::atomic<uint64_t> next{1};  // 0 is never an id: mirrors use it for "nothing"
    return next.fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t id_;
};

}  // namespace qwenrt
