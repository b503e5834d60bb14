// KvCache: keys and values of the full-attention layers for one sequence, f32, plain data.
// Positions 0 .. size()-1 are valid. Capacity grows by doubling (copy-on-grow: contents are kept),
// never beyond max_tokens(); Truncate cuts back to a prefix. Copying is explicit (Copy()).
// Thread safety: one thread per KvCache at a time; distinct caches are independent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/config.h"
#include "base/lineage.h"
#include "base/status.h"

namespace qwenrt {

class KvCache {
 public:
  // An empty cache for `config`'s attention layers holding at most `max_tokens` positions
  // (<= 0: the model's training context). Allocates `initial_capacity` positions up front.
  // Errors: InvalidArgument (initial_capacity > max_tokens), OutOfMemory.
  static StatusOr<KvCache> Create(const ModelConfig& config, int64_t max_tokens = 0,
                                  int64_t initial_capacity = 0);

  KvCache(KvCache&&) noexcept = default;
  KvCache& operator=(KvCache&&) noexcept = default;

  int64_t size() const { return size_; }          // valid positions
  int64_t capacity() const { return capacity_; }  // allocated positions
  int64_t max_tokens() const { return max_tokens_; }
  int64_t n_layers() const { return static_cast<int64_t>(k_.size()); }  // attention layers
  int64_t n_head_kv() const { return n_head_kv_; }
  int64_t head_dim() const { return head_dim_; }
  int64_t row_floats() const { return n_head_kv_ * head_dim_; }  // floats per position per K or V

  // Makes capacity >= n (doubling), keeping the first size() positions. Errors: ContextFull
  // (n > max_tokens), OutOfMemory; on error the cache is unchanged.
  Status Reserve(int64_t n);
  // Keeps positions [0, n) (no-op if n >= size()). Capacity is kept.
  void Truncate(int64_t n);
  // Marks positions [size(), n) as valid after the forward pass wrote them (n <= capacity()).
  void Commit(int64_t n);

  // Attention layer `a` (0-based among attention layers): [capacity, Hkv, Dh], row p = position p.
  // The mutable views renew lineage(): whoever writes rows through them changes "the contents".
  float* k(int64_t a) {
    lineage_.Renew();
    return k_[a].data();
  }
  float* v(int64_t a) {
    lineage_.Renew();
    return v_[a].data();
  }
  const float* k(int64_t a) const { return k_[a].data(); }
  const float* v(int64_t a) const { return v_[a].data(); }

  // Names the contents of positions [0, size()) (lineage.h). Kept by Reserve, Truncate (a prefix of
  // the same contents) and Commit; renewed by the mutable k()/v() views; moved with the contents.
  uint64_t lineage() const { return lineage_.id(); }

  // Bytes allocated for K and V (capacity, not size).
  size_t bytes() const;
  // A deep copy with capacity = size() (rounded up to at least 1 position). Error: OutOfMemory.
  StatusOr<KvCache> Copy() const;

 private:
  KvCache() = default;

  int64_t size_ = 0, capacity_ = 0, max_tokens_ = 0;
  int64_t n_head_kv_ = 0, head_dim_ = 0;
  std::vector<std::vector<float>> k_;  // [n_attn_layers][capacity * Hkv * Dh]
  std::vector<std::vector<float>> v_;  // [n_attn_layers][capacity * Hkv * Dh]
  Lineage lineage_;
};

}  // namespace qwenrt
