// KvCache pages: allocation, sharing and copy-on-write. Every change of the page table allocates
// first (new pages, private copies, bigger tables) and only then swaps the results in, so a failed
// allocation leaves the cache as it was.
#include "model/kv_cache.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <new>

#include "base/guard_alloc.h"

namespace qwenrt {

struct KvPageRef::Page {
  std::atomic<int32_t> refs{1};
  uint8_t* data = nullptr;
  ~Page() { delete[] data; }
};

KvPageRef KvPageRef::Allocate(size_t bytes) {
  KvPageRef r;
  auto* p = new (std::nothrow) Page;
  if (p == nullptr) return r;
  p->data = new (std::nothrow) uint8_t[bytes];
  if (p->data == nullptr) {
    delete p;
    return r;
  }
  r.p_ = p;
  return r;
}

KvPageRef::KvPageRef(const KvPageRef& other) noexcept : p_(other.p_) {
  // Relaxed: a new reference is made from one the caller holds, so the page cannot die meanwhile.
  if (p_ != nullptr) p_->refs.fetch_add(1, std::memory_order_relaxed);
}

uint8_t* KvPageRef::data() const { return p_ == nullptr ? nullptr : p_->data; }

int32_t KvPageRef::holders() const {
  return p_ == nullptr ? 0 : p_->refs.load(std::memory_order_acquire);
}

void KvPageRef::Release() noexcept {
  // acq_rel: this holder's reads happen before the page is freed or written by the last holder.
  if (p_ != nullptr && p_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p_;
  p_ = nullptr;
}

int64_t KvCache::RowBytes(const ModelConfig& config, KvType type) {
  return KvRowBytes(type, config.n_head_kv * config.head_dim);
}

size_t KvCache::PageBytes(const ModelConfig& config, const KvCacheOptions& options) {
  return static_cast<size_t>(2 * options.page_rows * RowBytes(config, options.type));
}

size_t KvCache::BytesFor(const ModelConfig& config, int64_t positions,
                         const KvCacheOptions& options) {
  // Pages are whole: the last one is allocated in full however few positions it holds.
  const int64_t pages =
      (std::max<int64_t>(positions, 0) + options.page_rows - 1) / options.page_rows;
  const int64_t slots = config.n_attn_layers() + (options.mtp ? config.n_nextn : 0);
  return static_cast<size_t>(pages * slots) * PageBytes(config, options);
}

StatusOr<KvCache> KvCache::Create(const ModelConfig& config, int64_t max_tokens,
                                  int64_t initial_capacity, const KvCacheOptions& options) {
  KvCache kv;
  kv.max_tokens_ = max_tokens > 0 ? max_tokens : config.n_ctx_train;
  kv.n_head_kv_ = config.n_head_kv;
  kv.head_dim_ = config.head_dim;
  if (initial_capacity < 0 || initial_capacity > kv.max_tokens_) {
    return InvalidArgument("KV cache initial capacity {} is outside [0, {}]", initial_capacity,
                           kv.max_tokens_);
  }
  if (options.page_rows < 1 || options.page_rows > (int64_t{1} << 20))
    return InvalidArgument("KV cache page size {} is outside [1, {}] positions", options.page_rows,
                           1 << 20);
  if (static_cast<uint32_t>(options.type) >= kKvTypeCount)
    return InvalidArgument("unknown KV storage type {}", static_cast<uint32_t>(options.type));
  if (config.n_attn_layers() > 0 && !KvTypeFits(options.type, config.head_dim)) {
    return Unsupported(
        "KV storage type {} needs a head size that is a multiple of 32 (this model's is {})",
        KvTypeName(options.type), config.head_dim);
  }
  if (options.mtp && config.n_nextn == 0)
    return InvalidArgument("KV cache: an MTP slot was asked for, but the model has no MTP block");
  const int64_t slots = config.n_attn_layers() + (options.mtp ? config.n_nextn : 0);
  kv.trunk_layers_ = config.n_attn_layers();
  kv.type_ = options.type;
  kv.page_rows_ = options.page_rows;
  kv.max_bytes_ = options.max_bytes;
  kv.row_bytes_ = RowBytes(config, kv.type_);
  QWENRT_RETURN_IF_ERROR(GuardAlloc(
      [&] {
        kv.pages_.resize(slots);
        kv.bases_.resize(slots);
      },
      "out of memory creating the KV cache"));
  QWENRT_RETURN_IF_ERROR(kv.Reserve(initial_capacity));
  return kv;
}

bool KvCache::PageHeldAlone(int64_t i) const {
  for (const auto& layer : pages_)
    if (layer[i].holders() != 1) return false;
  return true;
}

void KvCache::SetPage(int64_t i, std::vector<KvPageRef>&& per_layer) {
  for (size_t a = 0; a < pages_.size(); ++a) {
    pages_[a][i] = std::move(per_layer[a]);
    bases_[a][i] = pages_[a][i].data();
  }
  present_[i] = 1;
}

void KvCache::DropPage(int64_t i) {
  for (size_t a = 0; a < pages_.size(); ++a) {
    pages_[a][i].Release();
    bases_[a][i] = nullptr;
  }
  present_[i] = 0;
}

void KvCache::UpdateCapacity() {
  int64_t n = 0;
  while (n < static_cast<int64_t>(present_.size()) && present_[n]) ++n;
  capacity_ = std::min(max_tokens_, n * page_rows_);
}

Status KvCache::Reserve(int64_t n, int64_t from) {
  from = from < 0 ? size_ : std::min(from, size_);
  if (n <= from) return OkStatus();
  if (n > max_tokens_) {
    return ContextFull("context full: {} positions needed, the KV cache holds at most {}", n,
                       max_tokens_);
  }
  const int64_t P = page_rows_, first = from / P, last = (n - 1) / P;
  const size_t A = pages_.size(), half = static_cast<size_t>(P * row_bytes_);
  if (max_bytes_ > 0) {
    // Counted before anything is allocated: missing pages are new memory; a shared page replaced
    // by a private copy stays one page of this cache.
    int64_t held = 0, missing = 0;
    for (uint8_t p : present_) held += p;
    for (int64_t i = first; i <= last; ++i)
      missing += i >= static_cast<int64_t>(present_.size()) || !present_[i];
    const size_t need = static_cast<size_t>(held + missing) * A * page_bytes();
    if (need > max_bytes_) {
      return OutOfMemory("KV cache: {} positions need {} bytes of pages, over the {}-byte budget",
                         n, need, max_bytes_);
    }
  }
  // Pages to put in: missing ones, and private copies of shared ones (with the valid rows they
  // hold: only the page holding position `from` when from == size()).
  std::vector<std::pair<int64_t, std::vector<KvPageRef>>> fresh;
  const auto make_pages = [&]() -> Status {
    if (static_cast<int64_t>(present_.size()) <=
        last) {  // bigger tables first (null entries change nothing)
      present_.resize(static_cast<size_t>(last + 1), 0);
      for (size_t a = 0; a < A; ++a) {
        pages_[a].resize(static_cast<size_t>(last + 1));
        bases_[a].resize(static_cast<size_t>(last + 1), nullptr);
      }
    }
    for (int64_t i = first; i <= last; ++i) {
      if (present_[i] && PageHeldAlone(i)) continue;
      std::vector<KvPageRef> per_layer(A);
      const int64_t valid = present_[i] ? std::clamp<int64_t>(size_ - i * P, 0, P) : 0;
      for (size_t a = 0; a < A; ++a) {
        per_layer[a] = KvPageRef::Allocate(page_bytes());
        if (per_layer[a].null()) {
          return OutOfMemory(
              "out of memory for KV cache pages up to {} positions ({} bytes per page)", n,
              page_bytes());
        }
        if (valid > 0) {  // copy-on-write of the rows this cache shares
          const uint8_t* src = pages_[a][i].data();
          const size_t rows = static_cast<size_t>(valid * row_bytes_);
          std::memcpy(per_layer[a].data(), src, rows);
          std::memcpy(per_layer[a].data() + half, src + half, rows);
        }
      }
      fresh.emplace_back(i, std::move(per_layer));
    }
    return OkStatus();
  };
  QWENRT_RETURN_IF_ERROR(
      GuardAlloc(make_pages, "out of memory growing the KV cache page table to {} positions", n));
  for (auto& [i, per_layer] : fresh) SetPage(i, std::move(per_layer));
  UpdateCapacity();
  return OkStatus();
}

void KvCache::Prefault() {
  const int64_t P = page_rows_;
  const size_t half = static_cast<size_t>(P * row_bytes_);
  for (int64_t i = size_ / P; i < static_cast<int64_t>(present_.size()); ++i) {
    if (!present_[i] || !PageHeldAlone(i)) continue;
    const int64_t valid = std::clamp<int64_t>(size_ - i * P, 0, P);  // rows kept as they are
    const size_t skip = static_cast<size_t>(valid * row_bytes_);
    for (auto& layer : pages_) {
      uint8_t* page = layer[static_cast<size_t>(i)].data();
      std::memset(page + skip, 0, half - skip);         // K rows
      std::memset(page + half + skip, 0, half - skip);  // V rows
    }
  }
}

void KvCache::Truncate(int64_t n) {
  size_ = std::clamp<int64_t>(n, 0, size_);
  const int64_t keep = (size_ + page_rows_ - 1) / page_rows_;
  for (int64_t i = keep; i < static_cast<int64_t>(present_.size()); ++i)
    if (present_[i] && !PageHeldAlone(i)) DropPage(i);
  UpdateCapacity();
}

void KvCache::Commit(int64_t n) { size_ = std::clamp<int64_t>(n, size_, capacity_); }

void KvCache::WriteRows(int64_t a, int64_t from, int64_t n, const float* k, const float* v) {
  lineage_.Renew();
  const int64_t P = page_rows_, row = row_floats();
  for (int64_t p = from; p < from + n;) {
    const int64_t i = p / P, off = p % P, m = std::min(P - off, from + n - p);
    assert(present_[i] && pages_[a][i].holders() == 1 && "KvCache: Reserve before writing rows");
    uint8_t* base = pages_[a][i].data() + off * row_bytes_;
    cpu::KvEncodeRows(type_, k + (p - from) * row, m, row, base);
    cpu::KvEncodeRows(type_, v + (p - from) * row, m, row, base + P * row_bytes_);
    p += m;
  }
}

void KvCache::WriteStoredRows(int64_t a, int64_t from, int64_t n, const uint8_t* k,
                              const uint8_t* v) {
  lineage_.Renew();
  const int64_t P = page_rows_;
  for (int64_t p = from; p < from + n;) {
    const int64_t i = p / P, off = p % P, m = std::min(P - off, from + n - p);
    assert(present_[i] && pages_[a][i].holders() == 1 && "KvCache: Reserve before writing rows");
    uint8_t* base = pages_[a][i].data() + off * row_bytes_;
    std::memcpy(base, k + (p - from) * row_bytes_, static_cast<size_t>(m * row_bytes_));
    std::memcpy(base + P * row_bytes_, v + (p - from) * row_bytes_,
                static_cast<size_t>(m * row_bytes_));
    p += m;
  }
}

void KvCache::ReadRows(int64_t a, int64_t from, int64_t n, float* k, float* v) const {
  const KvView kv = KeyView(a), vv = ValueView(a);
  const int64_t row = row_floats();
  for (int64_t j = 0; j < n; ++j) {
    cpu::KvDecode(type_, kv.Row(from + j), 0, row, k + j * row);
    cpu::KvDecode(type_, vv.Row(from + j), 0, row, v + j * row);
  }
}

std::span<const uint8_t> KvCache::StoredRows(int64_t a, bool value, int64_t from, int64_t n) const {
  const uint8_t* row = (value ? ValueView(a) : KeyView(a)).Row(from);
  return {row, static_cast<size_t>(n * row_bytes_)};
}

size_t KvCache::bytes() const {
  size_t n = 0;
  for (uint8_t p : present_) n += p;
  return n * pages_.size() * page_bytes();
}

size_t KvCache::unique_bytes() const {
  size_t n = 0;
  for (const auto& layer : pages_)
    for (const KvPageRef& p : layer) n += p.holders() == 1 ? page_bytes() : 0;
  return n;
}

size_t KvCache::shared_bytes() const {
  size_t n = 0;
  for (const auto& layer : pages_)
    for (const KvPageRef& p : layer) n += p.holders() > 1 ? page_bytes() : 0;
  return n;
}

size_t KvCache::prorated_bytes() const {
  double n = 0;
  for (const auto& layer : pages_)
    for (const KvPageRef& p : layer)
      if (const int32_t h = p.holders(); h > 0) n += static_cast<double>(page_bytes()) / h;
  return static_cast<size_t>(n + 0.5);
}

StatusOr<KvCache> KvCache::Copy() const {
  KvCache c;
  c.max_tokens_ = max_tokens_;
  c.n_head_kv_ = n_head_kv_;
  c.head_dim_ = head_dim_;
  c.page_rows_ = page_rows_;
  c.max_bytes_ = max_bytes_;
  c.row_bytes_ = row_bytes_;
  c.type_ = type_;
  c.size_ = size_;
  c.trunk_layers_ = trunk_layers_;
  const size_t n_pages = static_cast<size_t>((size_ + page_rows_ - 1) / page_rows_);
  const auto copy_tables = [&] {
    c.present_.assign(present_.begin(), present_.begin() + static_cast<std::ptrdiff_t>(n_pages));
    c.pages_.resize(pages_.size());
    c.bases_.resize(pages_.size());
    for (size_t a = 0; a < pages_.size(); ++a) {
      c.pages_[a].assign(pages_[a].begin(),
                         pages_[a].begin() + static_cast<std::ptrdiff_t>(n_pages));
      c.bases_[a].assign(bases_[a].begin(),
                         bases_[a].begin() + static_cast<std::ptrdiff_t>(n_pages));
    }
  };
  QWENRT_RETURN_IF_ERROR(GuardAlloc(
      copy_tables, "out of memory copying the KV cache's page table ({} pages)", n_pages));
  c.UpdateCapacity();
  return c;
}

}  // namespace qwenrt
