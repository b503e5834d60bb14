// K/V rows laid out in cache pages for the attention tests (attention_test, kv_cache_test): seeded
// Gaussian data, the largest difference of two outputs, and Paged, which encodes K and V rows in
// a storage type into pages and hands out the views cpu::Attention and ref::Attention read.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "ops/kv_view.h"

namespace qwenrt::test {

inline std::vector<float> Gauss(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

inline double MaxAbs(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(double(a[i]) - b[i]));
  return m;
}

// Rows [n, row] stored in `type`, in pages of `page_rows` positions: K rows then V rows per page.
struct Paged {
  std::vector<std::vector<uint8_t>> pages;
  std::vector<const uint8_t*> bases;
  int64_t page_rows, row_bytes;
  KvType type;
  Paged(KvType t, const std::vector<float>& k, const std::vector<float>& v, int64_t n, int64_t row,
        int64_t P)
      : page_rows(P), row_bytes(KvRowBytes(t, row)), type(t) {
    for (int64_t p0 = 0; p0 < n; p0 += P) {
      const int64_t m = std::min(P, n - p0);
      std::vector<uint8_t> page(static_cast<size_t>(2 * P * row_bytes),
                                0xAB);  // junk past the rows
      cpu::KvEncodeRows(t, k.data() + p0 * row, m, row, page.data());
      cpu::KvEncodeRows(t, v.data() + p0 * row, m, row, page.data() + P * row_bytes);
      pages.push_back(std::move(page));
    }
    for (auto& p : pages) bases.push_back(p.data());
  }
  KvView K() const { return KvView{bases.data(), 0, page_rows, row_bytes, type}; }
  KvView V() const {
    return KvView{bases.data(), page_rows * row_bytes, page_rows, row_bytes, type};
  }
};

}  // namespace qwenrt::test
