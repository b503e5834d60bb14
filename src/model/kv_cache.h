// KvCache: keys and values of the full-attention layers for one sequence, in fixed-size pages that
// several caches may share (docs/kv-cache.md). Positions 0 .. size()-1 are valid.
//
//   page i of attention layer a: positions [i*P, (i+1)*P), K rows [P, Hkv*Dh] then V rows, in the
//   cache's storage type (f32, f16 or q8_0: ops/kv_view.h); P = page_rows() (256 by default).
//
// Pages are reference counted. Copy() (a fork) shares every page holding valid positions instead
// of copying bytes; a cache writes only into pages it holds alone, so Reserve() first replaces a
// shared page it is about to write by a private copy (copy-on-write: after a fork only the partial
// last page of the shared prefix is ever copied). Truncate() drops the shared pages past the cut.
//
// Thread safety: one thread per KvCache at a time; caches that share pages may be used on different
// threads at once: a shared page is never written (it is immutable until a single holder is left),
// reference counts are atomic, and a holder that finds itself alone (acquire) sees every read the
// others made of it finished.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/lineage.h"
#include "base/status.h"
#include "model/config.h"
#include "ops/kv_view.h"

namespace qwenrt {

struct KvCacheOptions {
  KvType type = KvType::kF32;  // storage type of the rows
  int64_t page_rows = 256;     // positions per page (tests use small pages to cross boundaries)
  // Most bytes of pages the cache may hold (0 = no limit): a Reserve that would pass it fails with
  // OutOfMemory before allocating, so a host's memory budget is refused, not overrun.
  size_t max_bytes = 0;
  // One more attention slot per MTP block of the model (n_nextn), after the trunk's: the draft
  // head's own K/V (model/mtp.h), paged, shared, truncated and copied with the trunk's rows. Only
  // for a model with MTP blocks; sessions that do not draft leave it off and pay nothing.
  bool mtp = false;
};

// One page's memory and its reference count (KvCache's business; exposed only for its members).
class KvPageRef {
 public:
  KvPageRef() = default;
  // A new page of `bytes` bytes held once; null() when out of memory.
  static KvPageRef Allocate(size_t bytes);
  KvPageRef(const KvPageRef& other) noexcept;
  KvPageRef(KvPageRef&& other) noexcept : p_(other.p_) { other.p_ = nullptr; }
  KvPageRef& operator=(KvPageRef other) noexcept {
    std::swap(p_, other.p_);
    return *this;
  }
  ~KvPageRef() { Release(); }

  bool null() const { return p_ == nullptr; }
  uint8_t* data() const;
  // Caches holding the page now (acquire: when it reads 1, every other holder's reads are done).
  int32_t holders() const;
  void Release() noexcept;

 private:
  struct Page;
  Page* p_ = nullptr;
};

class KvCache {
 public:
  // An empty cache for `config`'s attention layers holding at most `max_tokens` positions
  // (<= 0: the model's training context). Allocates pages for `initial_capacity` positions up
  // front. Errors: InvalidArgument (initial_capacity > max_tokens, page_rows < 1), Unsupported (a
  // storage type the model's head size cannot use: q8_0 needs head_dim % 32 == 0), OutOfMemory.
  static StatusOr<KvCache> Create(const ModelConfig& config, int64_t max_tokens = 0,
                                  int64_t initial_capacity = 0, const KvCacheOptions& options = {});

  // The sizes Create and Reserve allocate by, also used by EstimateMemory
  // (session/memory_estimate.h) so that an estimate cannot drift from the allocation. RowBytes:
  // stored bytes per position per K or V; PageBytes: one page of one layer (K and V); BytesFor: the
  // pages covering `positions` positions, all attention layers (what bytes() reports once
  // Reserve(positions) ran on a new cache).
  static int64_t RowBytes(const ModelConfig& config, KvType type);
  static size_t PageBytes(const ModelConfig& config, const KvCacheOptions& options);
  static size_t BytesFor(const ModelConfig& config, int64_t positions,
                         const KvCacheOptions& options);

  KvCache(KvCache&&) noexcept = default;
  KvCache& operator=(KvCache&&) noexcept = default;

  int64_t size() const { return size_; }  // valid positions
  int64_t capacity() const {
    return capacity_;
  }  // positions covered by pages, from 0 without a gap
  int64_t max_tokens() const { return max_tokens_; }
  int64_t n_layers() const { return static_cast<int64_t>(pages_.size()); }  // attention slots
  // Trunk attention layers; the slots from here on (n_layers() - trunk_layers()) are MTP blocks'.
  int64_t trunk_layers() const { return trunk_layers_; }
  bool has_mtp() const { return n_layers() > trunk_layers_; }
  int64_t mtp_slot(int64_t block = 0) const { return trunk_layers_ + block; }
  int64_t n_head_kv() const { return n_head_kv_; }
  int64_t head_dim() const { return head_dim_; }
  int64_t row_floats() const { return n_head_kv_ * head_dim_; }  // elements per position per K or V
  KvType type() const { return type_; }
  int64_t page_rows() const { return page_rows_; }
  size_t max_bytes() const { return max_bytes_; }   // 0 = no limit
  int64_t row_bytes() const { return row_bytes_; }  // stored bytes per position per K or V

  // Makes positions [from, n) writable (from < 0: size(); else at most size(): a caller about to
  // Truncate(from) and write): pages exist for them and every page they touch is held by this cache
  // alone (a shared one is copied first). The contents and lineage() do not change.
  // Errors: ContextFull (n > max_tokens), OutOfMemory (also: the pages would pass max_bytes,
  // checked before allocating); on error the cache is unchanged.
  Status Reserve(int64_t n, int64_t from = -1);
  // Writes zeros into the rows past size() of every page this cache holds alone, so that the
  // operating system commits the pages now (Linux maps untouched allocations lazily: an allocation
  // that succeeded can still fail when first written). The contents and lineage() do not change.
  void Prefault();
  // Keeps positions [0, n) (no-op if n >= size()). Pages past the cut that other caches share are
  // dropped; pages held alone are kept for reuse (capacity).
  void Truncate(int64_t n);
  // Marks positions [size(), n) as valid after the forward pass wrote them (n <= capacity()).
  void Commit(int64_t n);

  // Writes rows [from, from + n) of attention layer `a` (0-based among attention layers), converted
  // to the storage type: k, v: [n, Hkv, Dh] f32. The rows must have been made writable by Reserve.
  // Renews lineage(): whoever writes rows changes "the contents".
  void WriteRows(int64_t a, int64_t from, int64_t n, const float* k, const float* v);
  // The same from rows already in the storage type: k, v: n * row_bytes() bytes each.
  void WriteStoredRows(int64_t a, int64_t from, int64_t n, const uint8_t* k, const uint8_t* v);
  // Rows [from, from + n) of layer `a` widened to f32: k, v: [n, Hkv, Dh] (from + n <= capacity()).
  void ReadRows(int64_t a, int64_t from, int64_t n, float* k, float* v) const;
  // The stored bytes of rows [from, from + n) of layer `a`, K (value = false) or V; the range must
  // lie inside one page (from / P == (from + n - 1) / P).
  std::span<const uint8_t> StoredRows(int64_t a, bool value, int64_t from, int64_t n) const;
  // What attention reads (ops/kv_view.h): layer `a`'s K or V rows through the page table. Valid
  // until the next Reserve, Truncate or move.
  KvView KeyView(int64_t a) const { return View(a, 0); }
  KvView ValueView(int64_t a) const { return View(a, page_rows_ * row_bytes_); }

  // Names the contents of positions [0, size()) (lineage.h). Kept by Reserve, Truncate (a prefix of
  // the same contents) and Commit; renewed by WriteRows / WriteStoredRows; moved with the contents;
  // a Copy() has its own.
  uint64_t lineage() const { return lineage_.id(); }

  // Memory of the pages this cache holds (capacity, not size): all of them; those no other cache
  // holds; those shared with at least one other; and the cache's share when every page's bytes are
  // divided among its holders (summed over caches that share only among themselves: their total).
  // The holder counts are read now: another thread may change them the next moment.
  size_t bytes() const;
  size_t unique_bytes() const;
  size_t shared_bytes() const;
  size_t prorated_bytes() const;
  size_t page_bytes() const {
    return static_cast<size_t>(2 * page_rows_ * row_bytes_);
  }  // per layer

  // A cache with the same valid positions that shares this one's pages (O(pages), no row is
  // copied); same type, page size and max_tokens. Error: OutOfMemory (the page tables).
  StatusOr<KvCache> Copy() const;

 private:
  KvCache() = default;
  KvView View(int64_t a, int64_t offset) const {
    return KvView{bases_[a].data(), offset, page_rows_, row_bytes_, type_};
  }
  bool PageHeldAlone(int64_t i) const;
  void SetPage(int64_t i, std::vector<KvPageRef>&& per_layer);
  void DropPage(int64_t i);
  void UpdateCapacity();

  int64_t size_ = 0, capacity_ = 0, max_tokens_ = 0;
  int64_t trunk_layers_ = 0;
  int64_t n_head_kv_ = 0, head_dim_ = 0;
  int64_t page_rows_ = 256, row_bytes_ = 0;
  size_t max_bytes_ = 0;  // KvCacheOptions::max_bytes
  KvType type_ = KvType::kF32;
  std::vector<uint8_t> present_;               // [n_pages] 1 where the page exists (all layers)
  std::vector<std::vector<KvPageRef>> pages_;  // [n_attn_layers][n_pages]
  std::vector<std::vector<const uint8_t*>> bases_;  // [n_attn_layers][n_pages] pages_[a][i].data()
  Lineage lineage_;
};

}  // namespace qwenrt
