// KvCache growth and copies. Growth reallocates every layer's buffers to the new capacity first and
// only then swaps them in, so a failed allocation leaves the cache as it was.
#include "model/kv_cache.h"

#include <algorithm>
#include <new>

namespace qwenrt {

StatusOr<KvCache> KvCache::Create(const ModelConfig& config, int64_t max_tokens,
                                  int64_t initial_capacity) {
  KvCache kv;
  kv.max_tokens_ = max_tokens > 0 ? max_tokens : config.n_ctx_train;
  kv.n_head_kv_ = config.n_head_kv;
  kv.head_dim_ = config.head_dim;
  if (initial_capacity < 0 || initial_capacity > kv.max_tokens_) {
    return InvalidArgument("KV cache initial capacity {} is outside [0, {}]", initial_capacity,
                           kv.max_tokens_);
  }
  try {
    kv.k_.resize(config.n_attn_layers());
    kv.v_.resize(config.n_attn_layers());
  } catch (const std::bad_alloc&) {
    return OutOfMemory("out of memory creating the KV cache");
  }
  QWENRT_RETURN_IF_ERROR(kv.Reserve(initial_capacity));
  return kv;
}

Status KvCache::Reserve(int64_t n) {
  if (n <= capacity_) return OkStatus();
  if (n > max_tokens_) {
    return ContextFull("context full: {} positions needed, the KV cache holds at most {}", n, max_tokens_);
  }
  const int64_t new_cap = std::min(max_tokens_, std::max(n, 2 * capacity_));
  const size_t row = static_cast<size_t>(row_floats());
  try {
    std::vector<std::vector<float>> nk(k_.size()), nv(v_.size());
    for (size_t a = 0; a < k_.size(); ++a) {
      nk[a].resize(static_cast<size_t>(new_cap) * row);
      nv[a].resize(static_cast<size_t>(new_cap) * row);
      std::copy_n(k_[a].begin(), static_cast<size_t>(size_) * row, nk[a].begin());
      std::copy_n(v_[a].begin(), static_cast<size_t>(size_) * row, nv[a].begin());
    }
    k_.swap(nk);
    v_.swap(nv);
  } catch (const std::bad_alloc&) {
    return OutOfMemory("out of memory growing the KV cache to {} positions ({} bytes)", new_cap,
                       2 * k_.size() * static_cast<size_t>(new_cap) * row * sizeof(float));
  }
  capacity_ = new_cap;
  return OkStatus();
}

void KvCache::Truncate(int64_t n) { size_ = std::clamp<int64_t>(n, 0, size_); }

void KvCache::Commit(int64_t n) { size_ = std::clamp<int64_t>(n, size_, capacity_); }

size_t KvCache::bytes() const {
  return 2 * k_.size() * static_cast<size_t>(capacity_) * static_cast<size_t>(row_floats()) * sizeof(float);
}

StatusOr<KvCache> KvCache::Copy() const {
  KvCache c;
  c.max_tokens_ = max_tokens_;
  c.n_head_kv_ = n_head_kv_;
  c.head_dim_ = head_dim_;
  c.size_ = size_;
  c.capacity_ = std::min(max_tokens_, std::max<int64_t>(size_, 1));
  const size_t n = static_cast<size_t>(size_ * row_floats());
  const size_t cap = static_cast<size_t>(c.capacity_ * row_floats());
  try {
    c.k_.resize(k_.size());
    c.v_.resize(v_.size());
    for (size_t a = 0; a < k_.size(); ++a) {
      c.k_[a].resize(cap);
      c.v_[a].resize(cap);
      std::copy_n(k_[a].begin(), n, c.k_[a].begin());
      std::copy_n(v_[a].begin(), n, c.v_[a].begin());
    }
  } catch (const std::bad_alloc&) {
    return OutOfMemory("out of memory copying the KV cache ({} bytes)", bytes());
  }
  return c;
}

}  // namespace qwenrt
